import { createServer, type Server } from 'node:http';
import { scenarios, simulate } from '@keyscope/simulator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from './chromium.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * keyscope without tokens, in Chromium next to a page from another origin on the same machine:
 * keyscope's own page acknowledges incidents; the other page's requests to the API are refused.
 */

interface Incident {
  id: string;
  title: string;
  status: string;
  acknowledged: boolean;
  acknowledgedBy: string | null;
  resolvedBy: string | null;
}

let keyscope: RunningKeyscope;
let browser: Chromium;
let foreign: Server;
let foreignUrl: string;
let incidents: Incident[];

/** A page that sends what any site can make a browser send: a simple fetch and a form POST. */
function attackPage(target: string): string {
  return `<!doctype html><title>attack</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="${target}/resolve"><input name="a" value="b"></form>
<script>
  fetch(${JSON.stringify(`${target}/ack`)}, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: 'x' })
    .finally(() => { document.getElementById('f').submit(); document.title = 'sent'; });
</script>`;
}

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 5 * 60_000 }), {
    seed: 3,
  });
  await feedSpans(keyscope, spans);
  incidents = (await keyscope.api<{ items: Incident[] }>('/api/v1/incidents?status=open')).items;
  foreign = createServer((request, response) => {
    const id = decodeURIComponent((request.url ?? '/').slice(1));
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(attackPage(`${keyscope.url}/api/v1/incidents/${id}`));
  });
  await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
  foreignUrl = `http://127.0.0.1:${(foreign.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => foreign?.close(resolve));
  await keyscope?.stop();
});

describe('without tokens', () => {
  it('a page from another origin can neither acknowledge nor resolve an incident', async () => {
    const target = incidents[0]!;
    const page = await browser.context.newPage();
    const answers: number[] = [];
    page.on('response', (response) => {
      if (response.url().startsWith(keyscope.url)) answers.push(response.status());
    });
    await page.goto(`${foreignUrl}/${encodeURIComponent(target.id)}`);
    await expect.poll(() => page.title()).toBe('sent');
    // Both requests reached keyscope and were refused (the form's answer loads in the frame).
    await expect.poll(() => answers.length).toBe(2);
    expect(answers).toEqual([403, 403]);
    const after = await keyscope.api<Incident>(`/api/v1/incidents/${target.id}`);
    expect(after).toMatchObject({ acknowledged: false, resolvedBy: null, status: 'open' });
    await page.close();
  });

  it('keyscope’s own page acknowledges an incident', async () => {
    const target = incidents[incidents.length - 1]!;
    const page = await browser.context.newPage();
    await page.goto(`${keyscope.url}/`);
    await page.locator(`tr[data-incident="${target.id}"] button[data-action="ack"]`).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain(`Acknowledged: ${target.title}`);
    const after = await keyscope.api<Incident>(`/api/v1/incidents/${target.id}`);
    expect(after).toMatchObject({ acknowledged: true, acknowledgedBy: 'loopback' });
    await page.close();
  });
});
