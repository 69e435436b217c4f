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
  await feedSpans(keyscope, spans);
  page = await browser.context.newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
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
