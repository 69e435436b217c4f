import { readFileSync } from 'node:fs';
import { scenarios, simulate } from '@keyscope/simulator';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS_DIR, type Chromium, launchChromium, saveScreenshot } from './chromium.ts';
import {
  ADMIN_TOKEN,
  feedSpans,
  READ_TOKEN,
  type RunningKeyscope,
  startKeyscope,
  TRACE_LINK_TEMPLATE,
} from './running-keyscope.ts';

/**
 * The web page in headless Chromium against a running keyscope with tokens, fed the simulator's
 * node failover over OTLP: what on-call sees after following an alert's link.
 */

interface Incident {
  id: string;
  title: string;
  keys: number;
  stores: string[];
  acknowledged: boolean;
  acknowledgedBy: string | null;
}
interface IncidentDetail extends Incident {
  findings: { key: string; executions: number; stores: string[]; attempts: { traceId: string }[] }[];
}

let keyscope: RunningKeyscope;
let browser: Chromium;
let incident: IncidentDetail;

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: true }), launchChromium()]);
  const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 5 * 60_000 }), {
    seed: 3,
  });
  await feedSpans(keyscope, spans);
  const { items } = await keyscope.api<{ items: Incident[] }>(
    '/api/v1/incidents?status=open&class=cross_store_duplicate',
  );
  const largest = [...items].sort((a, b) => b.keys - a.keys)[0]!;
  incident = await keyscope.api<IncidentDetail>(`/api/v1/incidents/${largest.id}`);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

/** Uncaught exceptions and refusals by the Content-Security-Policy, from every tab. */
const pageErrors: string[] = [];

function watch(page: Page): Page {
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && message.text().startsWith('Refused')) pageErrors.push(message.text());
  });
  return page;
}

afterEach(() => {
  expect(pageErrors).toEqual([]);
});

/** A tab signed in with `token` through the page's own prompt (sessionStorage is per tab). */
async function signedInTab(token: string): Promise<Page> {
  const page = watch(await browser.context.newPage());
  await page.goto(`${keyscope.url}/`);
  await page.getByLabel('API token', { exact: true }).fill(token);
  await page.getByRole('button', { name: 'Use token' }).click();
  await page.locator('#incidents').waitFor();
  return page;
}

let readTab: Page;

describe('the web page', () => {
  it('asks for a token when the API answers 401, then lists the incident open first with counts', async () => {
    readTab = await signedInTab(READ_TOKEN);
    const row = readTab.locator(`tr[data-incident="${incident.id}"]`);
    await row.getByRole('link', { name: incident.title }).waitFor();
    expect(await row.locator('td').nth(2).textContent()).toBe(String(incident.keys));
    expect(await readTab.locator('#incident-counts').textContent()).toMatch(/\d+ open/);
    expect(await readTab.locator('#session').textContent()).toContain('bob · read-only');
    await saveScreenshot(readTab, 'incidents');
  });

  it('filters the list by class and keeps the filter in the URL', async () => {
    await readTab.getByLabel('Class').selectOption('scope_violation');
    await readTab.waitForURL(/class=scope_violation/);
    await expect.poll(() => readTab.locator(`tr[data-incident="${incident.id}"]`).count()).toBe(0);
    await readTab.getByLabel('Class').selectOption('');
    await expect.poll(() => readTab.locator(`tr[data-incident="${incident.id}"]`).count()).toBe(1);
  });

  it('draws one lane per dedup store and the executions of a duplicated key on the incident page', async () => {
    await readTab.goto(`${keyscope.url}/incidents/${incident.id}`);
    const timeline = readTab.locator('svg.timeline-plot');
    await timeline.waitFor();
    const lanes = await readTab
      .locator('[data-lane="store"]')
      .evaluateAll((elements) => elements.map((element) => element.getAttribute('data-lane-id')));
    expect(lanes.sort()).toEqual([...incident.stores].sort());

    // A key that ran the most is selected: its executions stand out, one per store.
    const selectedKey = await readTab.locator('.selected-key h2 code').textContent();
    const duplicated = incident.findings.find((finding) => finding.key === selectedKey)!;
    expect(duplicated.executions).toBe(Math.max(...incident.findings.map((finding) => finding.executions)));
    const executions = readTab.locator('.selected-marks [data-kind="server"][data-outcome="miss"]');
    expect(await executions.count()).toBe(duplicated.executions);
    const stores = await executions.evaluateAll((marks) =>
      marks.map((mark) => mark.getAttribute('data-store')),
    );
    expect(new Set(stores).size).toBe(duplicated.stores.length);
    expect(await executions.first().getAttribute('data-key')).toBe(duplicated.key);
    expect(await readTab.locator('svg.timeline-plot .connector').count()).toBeGreaterThanOrEqual(
      duplicated.executions - 1,
    );
    expect(await readTab.locator('.routing-event .event-label').first().textContent()).toContain('Node down');

    // Trace ids as text to paste, and linked through the configured template.
    const traceId = duplicated.attempts[0]!.traceId;
    expect(await readTab.locator('.selected-key .trace-id').first().textContent()).toBe(traceId);
    expect(await readTab.locator('.selected-key a.trace-link').first().getAttribute('href')).toBe(
      TRACE_LINK_TEMPLATE.replace('{traceId}', traceId),
    );
    await saveScreenshot(readTab, 'incident');
    await readTab.locator('.timeline-section').screenshot({ path: `${ARTIFACTS_DIR}incident-timeline.png` });
    // docs/incidents.md's picture: summary, advice, timeline and keys, without the long attempt table.
    const keys = (await readTab.locator('section.keys').boundingBox())!;
    await readTab.screenshot({
      path: `${ARTIFACTS_DIR}incident-overview.png`,
      fullPage: true,
      clip: { x: 0, y: 0, width: 1440, height: Math.ceil(keys.y + keys.height + 16) },
    });
  });

  it('highlights the key under the pointer and lists every affected key with a link to its page', async () => {
    expect(await readTab.locator('[data-key-row]').count()).toBe(incident.findings.length);
    const other = readTab.locator('[data-key-row]').nth(1);
    const otherKey = (await other.locator('a.key-link').textContent())!;
    await other.hover();
    const highlighted = await readTab
      .locator('.selected-marks .mark')
      .evaluateAll((marks) => [...new Set(marks.map((mark) => mark.getAttribute('data-key')))]);
    expect(highlighted).toEqual([otherKey]);
    expect(await other.locator('a.key-link').getAttribute('href')).toBe(
      `/keys/${encodeURIComponent(otherKey)}`,
    );
  });

  it("downloads the incident's keys as CSV, one row per execution, with the tab's token", async () => {
    const link = readTab.getByRole('link', { name: /Download these keys as CSV/ });
    expect(await link.getAttribute('href')).toBe(`/api/v1/incidents/${incident.id}?format=csv`);
    const [download] = await Promise.all([readTab.waitForEvent('download'), link.click()]);
    expect(download.suggestedFilename()).toBe(`keyscope-${incident.id}.csv`);
    const lines = readFileSync((await download.path())!, 'utf8')
      .trimEnd()
      .split('\r\n');
    expect(lines[0]).toMatch(/^key,tenant,class,findingId,incidentId,/);
    const executions = incident.findings.reduce((sum, finding) => sum + finding.executions, 0);
    expect(lines).toHaveLength(1 + executions);
  });

  it('shows every attempt of a key, client and server side, on the key page', async () => {
    const key = [...incident.findings].sort((a, b) => b.executions - a.executions)[0]!.key;
    const lookup = await keyscope.api<{ attempts: { start: string }[] }>(
      `/api/v1/keys/${encodeURIComponent(key)}`,
    );
    await readTab.goto(`${keyscope.url}/keys/${encodeURIComponent(key)}`);
    await readTab.locator('#key-value').waitFor();
    expect(await readTab.locator('#key-value').textContent()).toBe(key);
    expect(await readTab.locator('#verdict').textContent()).toContain('Ran more than once');
    const rows = readTab.locator('table.attempts tbody tr');
    expect(await rows.count()).toBe(lookup.attempts.length);
    const times = await rows
      .locator('time')
      .evaluateAll((elements) => elements.map((element) => Date.parse(element.getAttribute('datetime')!)));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    const sides = await rows.evaluateAll((elements) =>
      elements.map((element) => element.getAttribute('data-kind')),
    );
    expect(new Set(sides)).toEqual(new Set(['client', 'arrival', 'server']));
    // The finding's timing: start to start, and the caller's wait against the first execution.
    const facts = readTab.locator('article.finding dl.facts').first();
    expect(await facts.textContent()).toContain('Gap between starts');
    const timing = await facts
      .locator('dt', { hasText: 'Retry timing' })
      .locator('xpath=following-sibling::dd[1]')
      .textContent();
    expect(timing).toMatch(/first execution ran \d/);
    await saveScreenshot(readTab, 'key');
  });

  it('says a key keyscope never saw was never seen, and how far back its evidence reaches', async () => {
    const lookup = await keyscope.api<{ seen: boolean; evidenceSince: string | null }>(
      '/api/v1/keys/never-sent-key',
    );
    expect(lookup.seen).toBe(false);
    expect(lookup.evidenceSince).not.toBeNull();
    await readTab.goto(`${keyscope.url}/keys/never-sent-key`);
    await readTab.locator('#verdict').waitFor();
    const verdict = (await readTab.locator('#verdict').textContent())!;
    expect(verdict).toContain('Never seen');
    expect(verdict).toContain('evidence reaches back to');
    expect(verdict).not.toContain('No duplicate');
  });

  it('reports the declared key scope against the observed retry scope', async () => {
    await readTab.goto(`${keyscope.url}/scopes`);
    const row = readTab.locator('#scopes tbody tr').filter({ hasText: '/payments' });
    await row.waitFor();
    expect(await row.locator('td').nth(1).textContent()).toBe('node');
    expect(await row.locator('td').nth(3).textContent()).toBe('cluster');
    expect(await row.textContent()).toContain('Narrower than the retries');
    expect(await row.locator('.ladder .ladder-tags').allTextContents()).toEqual([
      'declared',
      'covers all · at risk',
      '',
      '',
    ]);
    await saveScreenshot(readTab, 'scopes');
  });

  it('shows the refusal when a read token tries to acknowledge', async () => {
    await readTab.goto(`${keyscope.url}/incidents/${incident.id}`);
    await readTab.getByRole('button', { name: 'Acknowledge' }).click();
    const notice = readTab.getByRole('alert');
    await expect.poll(() => notice.textContent()).toContain('refused to acknowledge');
    expect(await notice.textContent()).toContain('KS_API_FORBIDDEN');
    await saveScreenshot(readTab, 'ack-refused');
    const after = await keyscope.api<Incident>(`/api/v1/incidents/${incident.id}`);
    expect(after.acknowledged).toBe(false);
  });

  it('acknowledges with an admin token', async () => {
    const adminTab = await signedInTab(ADMIN_TOKEN);
    await adminTab.locator(`tr[data-incident="${incident.id}"] button[data-action="ack"]`).click();
    await expect
      .poll(() => adminTab.getByRole('alert').textContent())
      .toContain(`Acknowledged: ${incident.title}`);
    await expect
      .poll(() => adminTab.locator(`tr[data-incident="${incident.id}"]`).textContent())
      .toContain('by alice');
    const after = await keyscope.api<Incident>(`/api/v1/incidents/${incident.id}`);
    expect(after).toMatchObject({ acknowledged: true, acknowledgedBy: 'alice' });
    await adminTab.close();
  });
});
