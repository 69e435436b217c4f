import { StatusCode } from '@keyscope/otlp';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from './chromium.ts';
import { retriedKey } from './retried-key.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * A send that timed out before HTTP instrumentation recorded its headers carries no key; keyscope
 * takes it as the key's through the server span under it, and the key page says so.
 */
const KEY = 'order-linked-1';
/** A key whose first execution failed after admission, with nothing said about its effect. */
const SUSPECTED = 'order-suspected-1';
/** A key whose first send was sampled away, and whose second send's server span was lost. */
const GAPPED = 'order-gapped-1';

let keyscope: RunningKeyscope;
let browser: Chromium;
let page: Page;

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  const spans = retriedKey({
    key: KEY,
    traceNumber: 11,
    startUnixMillis: Date.now() - 60_000,
    retryAfterMillis: 1500,
  });
  // The first send, the one that timed out, without the key it would have carried.
  const timedOut = spans.find((span) => span.attributes['error.type'] === 'timeout')!;
  delete timedOut.attributes['idempotency.key'];
  const suspected = retriedKey({
    key: SUSPECTED,
    traceNumber: 12,
    startUnixMillis: Date.now() - 50_000,
    retryAfterMillis: 1500,
  });
  const failed = suspected.find((span) => span.attributes['idempotency.outcome'] === 'miss')!;
  failed.status = { code: StatusCode.ERROR, message: 'upstream timeout' };
  failed.attributes['http.response.status_code'] = 504;
  const gapped = retriedKey({
    key: GAPPED,
    traceNumber: 13,
    startUnixMillis: Date.now() - 40_000,
    retryAfterMillis: 1500,
  });
  const [firstSend, , , secondServer] = gapped;
  const kept = gapped.filter((span) => span !== firstSend && span !== secondServer);
  await feedSpans(keyscope, [...spans, ...suspected, ...kept]);
  page = await browser.context.newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

describe('a suspected duplicate', () => {
  it('says on the key page what it rests on', async () => {
    await page.goto(`${keyscope.url}/keys/${encodeURIComponent(SUSPECTED)}`);
    await page.locator('main h1').waitFor();
    const because = page
      .locator('dt', { hasText: 'Suspected because' })
      .locator('xpath=following-sibling::dd[1]');
    expect(await because.textContent()).toContain('an admitted attempt failed, its effect unknown');
  });
});

describe('a suspected duplicate on its incident page', () => {
  it('says what it rests on when its key is selected', async () => {
    const lookup = await keyscope.api<{ findings: { class: string; incidentId: string }[] }>(
      `/api/v1/keys/${encodeURIComponent(SUSPECTED)}`,
    );
    const suspected = lookup.findings.find((finding) => finding.class === 'suspected_duplicate')!;
    await page.goto(
      `${keyscope.url}/incidents/${encodeURIComponent(suspected.incidentId)}?key=${encodeURIComponent(SUSPECTED)}`,
    );
    const because = page.locator('.selected-key .suspected-because');
    await because.waitFor();
    expect(await because.textContent()).toContain('Suspected (');
    expect(await because.locator('li').allInnerTexts()).toContainEqual(
      expect.stringContaining('an admitted attempt failed, its effect unknown'),
    );
  });
});

describe('a send that carried no key', () => {
  it('is on the key page, as the key’s through its server span', async () => {
    await page.goto(`${keyscope.url}/keys/${encodeURIComponent(KEY)}`);
    await page.locator('main h1').waitFor();
    const sides = await page.locator('td').allInnerTexts();
    expect(sides).toContain('client send #0, key from its server span');
    expect(sides).toContain('client send #1');
  });
});

describe('a key whose evidence is incomplete', () => {
  it('says on the key page which of its attempts keyscope did not see', async () => {
    await page.goto(`${keyscope.url}/keys/${encodeURIComponent(GAPPED)}`);
    await page.locator('main h1').waitFor();
    const items = await page.locator('#evidence-gaps li').allInnerTexts();
    expect(items).toHaveLength(2);
    expect(items[0]).toContain('client send #1 to payments.internal has no server span under it');
    expect(items[1]).toContain('send #0 to payments.internal never reached keyscope (it holds #1)');
  });

  it('says nothing of the kind for a key whose every attempt is there', async () => {
    await page.goto(`${keyscope.url}/keys/${encodeURIComponent(KEY)}`);
    await page.locator('main h1').waitFor();
    expect(await page.locator('#evidence-gaps').count()).toBe(0);
  });
});
