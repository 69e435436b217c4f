import type { Span } from '@keyscope/otlp';
import { resource, span } from '@keyscope/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium, saveScreenshot } from './chromium.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * An incident whose keys reached more stores than it lists, and more keys than its detail
 * carries, in headless Chromium: the page says what it leaves out.
 */

const KEYS = 60;
const STORES_PER_KEY = 3;

let keyscope: RunningKeyscope;
let browser: Chromium;
let incidentId: string;
const pageErrors: string[] = [];

/** Each key executed once in each of its own node-local stores. */
function spreadKeys(): Span[] {
  const start = Date.now() - 5 * 60_000;
  const spans: Span[] = [];
  for (let k = 0; k < KEYS; k++) {
    for (let i = 0; i < STORES_PER_KEY; i++) {
      spans.push(
        span({
          key: `order-${String(k).padStart(2, '0')}`,
          outcome: 'miss',
          store: `payments/node:p-${k}-${i}`,
          scope: 'node',
          trace: k * 10 + i + 1,
          // All in one second: no node falls silent while the others serve (no routing event).
          startMillis: start + i * 10,
          resource: resource({ service: 'payments', instance: `p-${k}-${i}` }),
        }),
      );
    }
  }
  return spans;
}

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([
    startKeyscope({ tokens: false, detector: { maxStoresPerFinding: 2, maxStoresPerIncident: 25 } }),
    launchChromium(),
  ]);
  await feedSpans(keyscope, spreadKeys());
  const { items } = await keyscope.api<{ items: { id: string; keys: number }[] }>('/api/v1/incidents');
  expect(items.map((incident) => incident.keys)).toEqual([KEYS]);
  incidentId = items[0]!.id;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

async function incidentPage(): Promise<Page> {
  const page = await browser.context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${keyscope.url}/incidents/${incidentId}`);
  await page.locator('#incident-title').waitFor();
  return page;
}

describe('an incident that lists part of its stores and keys', () => {
  it('lists the first stores and nodes and says how many more there are', async () => {
    const page = await incidentPage();
    const facts = page.locator('.incident-summary dl.facts');
    expect(await facts.locator('dt').allTextContents()).toEqual(
      expect.arrayContaining(['Dedup stores (180)', 'Nodes (180)']),
    );
    const more = await facts.locator('li[data-more]').allTextContents();
    expect(more).toEqual(['and 155 more stores', 'and 155 more nodes']);
    expect(await facts.locator('dd ul.plain-list').first().locator('li code').count()).toBe(25);
    await saveScreenshot(page, 'incident-store-lists');
    await page.close();
    expect(pageErrors).toEqual([]);
  });

  it('shows the first fifty keys, each with its total of stores, and says the rest are in the CSV', async () => {
    const page = await incidentPage();
    expect(await page.locator('#keys-title').textContent()).toBe(`Affected keys (${KEYS})`);
    expect(await page.locator('[data-more-keys]').getAttribute('data-more-keys')).toBe('10');
    expect(await page.locator('[data-more-keys]').textContent()).toContain('and 10 more keys');
    const rows = page.locator('tr[data-key-row]');
    expect(await rows.count()).toBe(50);
    // Each key's row counts its 3 stores, though its finding lists 2.
    expect(await rows.first().locator('td.number').nth(1).textContent()).toBe(String(STORES_PER_KEY));
    await page.close();
    expect(pageErrors).toEqual([]);
  });
});
