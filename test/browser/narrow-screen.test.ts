import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scenarios, simulate } from '@keyscope/simulator';
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from './chromium.ts';
import { retriedKey } from './retried-key.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * The pages on a phone held upright (390 × 844 CSS pixels): nothing wider than the screen, and
 * every cell of the incident list and of the incident page's tables on it, labelled.
 */

/** A key of one long word, as generated ids are: it must wrap, not widen the page. */
const LONG_KEY = `checkout-${'9f2c41d07b8e'.repeat(6)}`;
const SHOTS = mkdtempSync(join(tmpdir(), 'keyscope-narrow-'));

let keyscope: RunningKeyscope;
let browser: Chromium;
let page: Page;
let incidentId: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  const now = Date.now();
  const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: now - 5 * 60_000 }), { seed: 3 });
  await feedSpans(keyscope, [
    ...spans,
    ...retriedKey({ key: LONG_KEY, traceNumber: 9, startUnixMillis: now - 60_000, retryAfterMillis: 2000 }),
  ]);
  const { items } = await keyscope.api<{ items: { id: string; keys: number }[] }>(
    '/api/v1/incidents?class=cross_store_duplicate',
  );
  incidentId = [...items].sort((a, b) => b.keys - a.keys)[0]!.id;
  page = await browser.context.newPage();
  await page.setViewportSize({ width: 390, height: 844 });
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

afterEach(() => {
  expect(pageErrors).toEqual([]);
});

/** The document is no wider than the screen: nothing to scroll to sideways. */
async function expectNoSidewaysScroll(): Promise<void> {
  // An expression, not a function: it runs in the page, whose globals this file's types do not know.
  const { scrollWidth, clientWidth } = await page.evaluate<{ scrollWidth: number; clientWidth: number }>(
    '({ scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth })',
  );
  expect(clientWidth).toBe(390);
  expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
}

/** Every cell of `table` lies within the screen's width, and carries its column's heading. */
async function expectCellsOnScreen(table: Locator, headings: string[]): Promise<void> {
  const cells = await table.locator(':scope > tbody > tr > *').evaluateAll((elements) =>
    elements.map((cell) => {
      const box = cell.getBoundingClientRect();
      const view = cell.ownerDocument.defaultView!;
      return {
        text: cell.textContent,
        left: box.left,
        right: box.right,
        label: view.getComputedStyle(cell, '::before').content,
      };
    }),
  );
  expect(cells.length).toBeGreaterThan(0);
  const offScreen = cells.filter((cell) => cell.left < 0 || cell.right > 390);
  expect(offScreen).toEqual([]);
  const labels = new Set(cells.map((cell) => cell.label));
  expect(labels).toEqual(new Set(headings.map((heading) => JSON.stringify(heading))));
}

describe('on a 390 px wide screen', () => {
  it('shows each incident of the list as a card, every field and action on screen', async () => {
    await page.goto(`${keyscope.url}/`);
    await page.locator('#incidents').waitFor();
    await page.screenshot({ path: join(SHOTS, 'incidents.png'), fullPage: true });
    await expectNoSidewaysScroll();
    await expectCellsOnScreen(page.locator('#incidents'), [
      'Severity',
      'Incident',
      'Keys',
      'Stores',
      'Opened',
      'Status',
      'Actions',
    ]);
    const acknowledge = (await page
      .locator(`tr[data-incident="${incidentId}"]`)
      .getByRole('button', { name: 'Acknowledge' })
      .boundingBox())!;
    expect(acknowledge.x + acknowledge.width).toBeLessThanOrEqual(390);
    const search = (await page.getByRole('searchbox', { name: 'Look up a key' }).boundingBox())!;
    expect(search.x + search.width).toBeLessThanOrEqual(390);
  });

  it('fits the incident page: summary, timeline frame, keys and the selected key as cards', async () => {
    await page.goto(`${keyscope.url}/incidents/${incidentId}`);
    await page.locator('svg.timeline-plot').waitFor();
    await page.screenshot({ path: join(SHOTS, 'incident.png'), fullPage: true });
    await expectNoSidewaysScroll();
    await expectCellsOnScreen(page.locator('table.keys-table'), [
      'Key',
      'Tenant',
      'Executions',
      'Stores',
      'Gap between starts',
      'Retried by',
      'Trace ids',
      'Timeline',
    ]);
    await expectCellsOnScreen(page.locator('.selected-key table.attempts'), [
      'Time',
      'Offset',
      'Side',
      'Where',
      'Store or target',
      'Outcome',
      'Duration',
      'Trace / span',
    ]);
    // The timeline keeps its width inside its own frame, which scrolls; the frame fits the screen.
    const frame = (await page.locator('.timeline-scroll').boundingBox())!;
    expect(frame.x).toBeGreaterThanOrEqual(0);
    expect(frame.x + frame.width).toBeLessThanOrEqual(390);
    for (const name of ['Zoom in', 'Zoom out', 'Show earlier', 'Show later', 'Reset zoom']) {
      const button = (await page.getByRole('button', { name }).boundingBox())!;
      expect(button.x + button.width).toBeLessThanOrEqual(390);
    }
  });

  it("wraps a long key's page instead of widening it", async () => {
    await page.goto(`${keyscope.url}/keys/${LONG_KEY}`);
    await page.locator('svg.timeline-plot').waitFor();
    await page.screenshot({ path: join(SHOTS, 'key.png'), fullPage: true });
    await expectNoSidewaysScroll();
    expect(await page.locator('#key-value').textContent()).toBe(LONG_KEY);
  });
});
