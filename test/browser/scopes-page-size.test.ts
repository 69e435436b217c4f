import { resource, serverSpan } from '@keyscope/attempts/testing';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from './chromium.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * The scopes page against a scope report longer than a page: it asks the API page by page, and
 * however many tiers an answer holds it shows a bounded table, never spreading the list into one
 * call (past ~100,000 arguments a call throws "Maximum call stack size exceeded").
 */
const TIERS = 620;

let keyscope: RunningKeyscope;
let browser: Chromium;

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  const now = Date.now() - 60_000;
  // Operations that are words, not ids: each its own tier.
  const words = (i: number) =>
    `${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`;
  const spans = Array.from({ length: TIERS }, (_, i) =>
    serverSpan({
      key: `order-${i}`,
      outcome: 'miss',
      scope: 'node',
      name: `POST /ops/${words(i)}`,
      trace: i + 1,
      id: i + 1,
      startMillis: now + i,
      resource: resource({ service: 'payments', instance: 'payments-a' }),
    }),
  );
  await feedSpans(keyscope, spans);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

async function openScopes(): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('crash', () => errors.push('the page crashed'));
  return { page, errors };
}

/** A row of the scope report as the API answers it, for tier `i`; `TIER` stands for it. */
const ROW = JSON.stringify({
  service: 'payments',
  operation: 'POST /payments/TIER',
  declaredScope: 'node',
  scopeFrom: 'span',
  declaredCounts: { node: 1 },
  keys: 1,
  keysSpanning: { nodes: 0, clusters: 0, regions: 0 },
  smallestCoveringScope: 'node',
  keysAtRisk: 0,
  status: 'sound',
  coverage: {
    keysOneIn: 8,
    arrivals: 0,
    arrivalsWithDecision: 0,
    requests: 0,
    requestsWithSend: 0,
    keys: 0,
    keysFullyVisible: 0,
    sends: 0,
    sendsWithServerSpan: 0,
    arrivalsWithDecisionRatio: null,
    requestsWithSendRatio: null,
    keysFullyVisibleRatio: null,
    sendsWithServerSpanRatio: null,
  },
}).split('TIER');

describe('the scopes page with many tiers', () => {
  it('shows the first page of tiers and the rest on "Show more", each once', async () => {
    const { page, errors } = await openScopes();
    await page.goto(`${keyscope.url}/scopes`);
    const rows = page.locator('#scopes tbody tr');
    await page.locator('#scopes').waitFor();
    expect(await rows.count()).toBe(500);
    await page.locator('#scopes-more').click();
    await expect.poll(() => rows.count()).toBe(TIERS);
    expect(await page.locator('#scopes-more').isHidden()).toBe(true);
    const operations = await page.locator('#scopes tbody tr td.wrap-anywhere').allInnerTexts();
    expect(new Set(operations).size).toBe(TIERS);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('renders an answer of 200,000 tiers as a bounded table, and says how many more tiers there are', async () => {
    const { page, errors } = await openScopes();
    // An answer far larger than a page (a server that ignores the limit), built in the page itself:
    // 96 MB is more than the browser's debugging protocol carries in one message.
    await page.addInitScript(
      ({ row, overflow }) => {
        const inPage = globalThis as { fetch: typeof fetch };
        const fetchFromNetwork = inPage.fetch.bind(inPage);
        inPage.fetch = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
          if (!String(input).startsWith('/api/v1/scopes')) return fetchFromNetwork(input, init);
          const items = Array.from({ length: 200_000 }, (_, i) => row.join(String(i))).join(',');
          const body = `{"items":[${items}],"nextCursor":null,"overflow":${overflow}}`;
          return Promise.resolve(new Response(body, { headers: { 'content-type': 'application/json' } }));
        };
      },
      {
        row: ROW,
        overflow: JSON.stringify({
          tiers: 246_000,
          keys: 300_000,
          keysSpanning: { nodes: 12, clusters: 0, regions: 0 },
          smallestCoveringScope: 'cluster',
          coverage: JSON.parse(ROW.join('0')).coverage,
        }),
      },
    );
    await page.goto(`${keyscope.url}/scopes`);
    // Building and parsing 96 MB takes the page a few seconds on an idle machine.
    await page.locator('#scopes').waitFor({ timeout: 90_000 });
    expect(await page.locator('#scopes tbody tr').count()).toBe(1_000);
    expect(await page.locator('#scopes-unshown').textContent()).toContain('Showing the first 1,000 tiers');
    expect(await page.locator('#scopes-overflow').textContent()).toMatch(/^and about 246,000 more tiers/);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
