import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium, saveScreenshot } from './chromium.ts';
import { HOSTILE_KEY, HOSTILE_SERVICE, hostileDuplicate } from './hostile-spans.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * Keys, services, stores and nodes come from whoever can send spans: the pages must show them as
 * text. Here every one of them is markup with script in it; none of it may become an element.
 */

let keyscope: RunningKeyscope;
let browser: Chromium;
let page: Page;
let incidentId: string;
/** Dialogs opened and exceptions thrown on the page: none are expected. */
const dialogs: string[] = [];

beforeAll(async () => {
  // No tokens: the open loopback mode, so the page goes straight to the data.
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  await feedSpans(keyscope, hostileDuplicate(Date.now() - 60_000));
  const { items } = await keyscope.api<{ items: { id: string; service: string }[] }>('/api/v1/incidents');
  incidentId = items.find((incident) => incident.service === HOSTILE_SERVICE)!.id;
  page = await browser.context.newPage();
  page.on('pageerror', (error) => dialogs.push(`uncaught: ${error.message}`));
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

/** Nothing from the spans became markup, and nothing ran. */
async function expectInert(): Promise<void> {
  expect(await page.locator('img').count()).toBe(0);
  expect(await page.locator('main script, main marquee, main b, main i, main u').count()).toBe(0);
  // Expressions, not functions: they run in the page, whose globals this file's types do not know.
  expect(await page.evaluate('document.scripts.length')).toBe(1);
  expect(await page.evaluate('typeof window.__pwned')).toBe('undefined');
  expect(dialogs).toEqual([]);
}

describe('span values on the pages', () => {
  it('are text in the incidents list', async () => {
    await page.goto(`${keyscope.url}/`);
    await page.locator('#incidents').waitFor();
    expect(await page.locator(`tr[data-incident="${incidentId}"]`).textContent()).toContain(HOSTILE_SERVICE);
    await expectInert();
  });

  it('are text in the incident page, its timeline and its key list', async () => {
    await page.goto(`${keyscope.url}/incidents/${incidentId}`);
    await page.locator('svg.timeline-plot').waitFor();
    expect(await page.locator('a.key-link').textContent()).toBe(HOSTILE_KEY);
    const laneLabels = await page.locator('.lane-label').allTextContents();
    expect(laneLabels.some((label) => label.startsWith('<svg onload='))).toBe(true);
    expect(await page.locator('svg.timeline-plot svg').count()).toBe(0);
    await expectInert();
    await saveScreenshot(page, 'hostile-incident');
  });

  it('are text on the key page, reached through its link', async () => {
    await page.locator('a.key-link').click();
    await page.locator('#key-value').waitFor();
    expect(await page.locator('#key-value').textContent()).toBe(HOSTILE_KEY);
    expect(await page.locator('table.attempts tbody tr').count()).toBe(4);
    await expectInert();
    await saveScreenshot(page, 'hostile-key');
  });

  it('are text in the scope report', async () => {
    await page.goto(`${keyscope.url}/scopes`);
    await page.locator('#scopes').waitFor();
    expect(await page.locator('#scopes tbody th').allTextContents()).toContain(HOSTILE_SERVICE);
    await expectInert();
  });
});
