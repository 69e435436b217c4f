import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from './chromium.ts';
import { retriedKey } from './retried-key.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/** The key search in the header of every page: paste a key, press Enter, read its page. */

/** A key with every character a URL treats specially, spaces and text beyond ASCII. */
const KEY = 'acct/42?retry=1&x=%41#part 2 — zürich 東京 ✓';

let keyscope: RunningKeyscope;
let browser: Chromium;
let page: Page;
let incidentId: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  await feedSpans(
    keyscope,
    retriedKey({ key: KEY, traceNumber: 7, startUnixMillis: Date.now() - 60_000, retryAfterMillis: 1500 }),
  );
  const { items } = await keyscope.api<{ items: { id: string }[] }>('/api/v1/incidents');
  incidentId = items[0]!.id;
  page = await browser.context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

afterEach(() => {
  expect(pageErrors).toEqual([]);
});

const searchBox = () => page.getByRole('searchbox', { name: 'Look up a key' });

describe('the key search', () => {
  it('is in the header of every page, labelled', async () => {
    for (const path of ['/', '/scopes', `/incidents/${incidentId}`, '/keys/some-key']) {
      await page.goto(`${keyscope.url}${path}`);
      await page.locator('main h1').waitFor();
      const search = page.getByRole('search').filter({ has: searchBox() });
      expect(await search.count()).toBe(1);
      expect(await search.locator('xpath=ancestor::header').count()).toBe(1);
    }
  });

  it('opens the page of the key typed, whatever characters it holds, on Enter', async () => {
    await page.goto(`${keyscope.url}/`);
    await page.locator('#incidents').waitFor();
    await searchBox().fill(KEY);
    await searchBox().press('Enter');
    await page.waitForURL((url) => url.pathname.startsWith('/keys/'));
    await page.locator('#key-value').waitFor();
    expect(new URL(page.url()).pathname).toBe(`/keys/${encodeURIComponent(KEY)}`);
    expect(await page.locator('#key-value').textContent()).toBe(KEY);
    expect(await page.locator('#verdict').textContent()).toContain('Ran more than once');
    expect(await page.locator('table.attempts tbody tr').count()).toBe(4);
    // The box keeps the key of the page it is on.
    expect(await searchBox().inputValue()).toBe(KEY);
  });

  it('looks up the key exactly as typed: surrounding spaces are part of it', async () => {
    await searchBox().fill(` ${KEY} `);
    await searchBox().press('Enter');
    await page.waitForURL((url) => url.pathname === `/keys/${encodeURIComponent(` ${KEY} `)}`);
    await page.locator('#verdict').waitFor();
    expect(await page.locator('#key-value').textContent()).toBe(` ${KEY} `);
    expect(await page.locator('#verdict').textContent()).toContain('Never seen');
  });

  it('does nothing on Enter in an empty box', async () => {
    await page.goto(`${keyscope.url}/scopes`);
    await page.locator('main h1').waitFor();
    await searchBox().press('Enter');
    expect(new URL(page.url()).pathname).toBe('/scopes');
    // The box is required: the browser keeps the form from submitting and says why.
    expect(await page.locator('#key-search-input:invalid').count()).toBe(1);
  });

  it('answers the address the form submits to without script, /keys?key=', async () => {
    await page.goto(`${keyscope.url}/keys?${new URLSearchParams({ key: KEY })}`);
    await page.locator('#key-value').waitFor();
    expect(await page.locator('#key-value').textContent()).toBe(KEY);
    expect(await page.locator('#verdict').textContent()).toContain('Ran more than once');
  });

  it("links the incident page's keys to the same address", async () => {
    await page.goto(`${keyscope.url}/incidents/${incidentId}`);
    const link = page.locator('a.key-link');
    await link.waitFor();
    expect(await link.getAttribute('href')).toBe(`/keys/${encodeURIComponent(KEY)}`);
  });
});
