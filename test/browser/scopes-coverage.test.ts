import { SpanKind } from '@keyscope/otlp';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from './chromium.ts';
import { retriedKey } from './retried-key.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * A client that samples its traces away: keyscope receives the servers' keyed spans, each naming
 * a send as its parent, and none of the sends. The scopes page says it sees a sample.
 */
const KEYS = 120;

let keyscope: RunningKeyscope;
let browser: Chromium;
let page: Page;

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  const start = Date.now() - 120_000;
  const spans = Array.from({ length: KEYS }, (_, i) =>
    retriedKey({
      key: `order-sampled-${i}`,
      traceNumber: 100 + i,
      startUnixMillis: start + i * 200,
      retryAfterMillis: 1500,
    }),
  )
    .flat()
    .filter((span) => span.kind !== SpanKind.CLIENT);
  // A key well past the others moves the watermark on, so theirs are counted.
  const later = retriedKey({
    key: 'order-later',
    traceNumber: 999,
    startUnixMillis: Date.now(),
    retryAfterMillis: 1500,
  });
  await feedSpans(keyscope, [...spans, ...later]);
  page = await browser.context.newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

describe('the scopes page', () => {
  it('warns that it sees a tier’s requests without the sends that made them', async () => {
    await page.goto(`${keyscope.url}/scopes`);
    const warnings = page.locator('#coverage-warnings li');
    await warnings.first().waitFor();
    const texts = await warnings.allInnerTexts();
    expect(texts).toContainEqual(
      expect.stringMatching(
        /^payments .+: keyscope sees 0% of this tier's requests with the send that made them: sampling\?$/,
      ),
    );
  });
});
