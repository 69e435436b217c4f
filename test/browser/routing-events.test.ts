import { scenarios, simulate } from '@keyscope/simulator';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium } from './chromium.ts';
import { feedSpans, type RunningKeyscope, startKeyscope } from './running-keyscope.ts';

/**
 * The routing events page, in Chromium, on the embedded service fed a simulated node failover:
 * every node_down keyscope inferred, with its window and links to the incidents it explains, and
 * the way back from an incident to its event.
 */
interface EventJson {
  id: string;
  type: string;
  service: string;
  node: string;
  description: string;
  incidentIds: string[];
}

let keyscope: RunningKeyscope;
let browser: Chromium;
let page: Page;
let events: EventJson[];

/** Uncaught exceptions and refusals by the Content-Security-Policy. */
const pageErrors: string[] = [];

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 5 * 60_000 }), {
    seed: 3,
  });
  await feedSpans(keyscope, spans);
  events = (await keyscope.api<{ items: EventJson[] }>('/api/v1/routing-events?limit=500')).items;
  page = await browser.context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && message.text().startsWith('Refused')) pageErrors.push(message.text());
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await keyscope?.stop();
});

afterEach(() => {
  expect(pageErrors).toEqual([]);
});

describe('the routing events page', () => {
  it('is in the navigation and lists every event with its description, window and the incidents citing it', async () => {
    expect(events.filter((e) => e.type === 'node_down').length).toBeGreaterThanOrEqual(2);
    await page.goto(`${keyscope.url}/`);
    await page.getByRole('link', { name: 'Routing events' }).click();
    await page.waitForURL(/\/routing-events$/);
    const rows = page.locator('#routing-events tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(events.length);
    expect(await page.getByRole('link', { name: 'Routing events' }).getAttribute('aria-current')).toBe(
      'page',
    );
    for (const event of events.filter((e) => e.type === 'node_down')) {
      const row = page.locator(`#routing-events tbody tr[data-event="${event.id}"]`);
      await expect(row.locator('th').textContent()).resolves.toBe('Node down');
      await expect(row.locator('.event-description').textContent()).resolves.toBe(event.description);
      await expect(row.textContent()).resolves.toContain(`node ${event.node}`);
      expect(await row.locator('time').count()).toBe(2);
      // Labelled for the one-card-per-row reading on a phone.
      expect(await row.locator('.event-description').getAttribute('data-label')).toBe('What keyscope saw');
      const links = await row
        .locator('.incident-link')
        .evaluateAll((as) => as.map((a) => a.getAttribute('href')));
      expect(links).toEqual(event.incidentIds.map((id) => `/incidents/${id}`));
    }
  });

  it('opens an incident from the event that explains it', async () => {
    const event = events.find((e) => e.incidentIds.length > 0)!;
    await page.goto(`${keyscope.url}/routing-events`);
    await page.locator(`tr[data-event="${event.id}"] .incident-link`).first().click();
    await page.waitForURL(new RegExp(`/incidents/${event.incidentIds[0]}$`));
    await page.locator('#incident-title').waitFor();
  });

  it('leads from an incident to its event, marked among the events of its service', async () => {
    const event = events.find((e) => e.incidentIds.length > 0)!;
    await page.goto(`${keyscope.url}/incidents/${event.incidentIds[0]}`);
    await page.locator('.routing-event-link').click();
    await page.waitForURL(/\/routing-events\?/);
    const marked = page.locator('#routing-events tbody tr[aria-current="true"]');
    await marked.waitFor();
    expect(await marked.getAttribute('data-event')).toBe(event.id);
    expect(await page.locator('#routing-events tbody tr').count()).toBe(
      events.filter((e) => e.service === event.service).length,
    );
  });

  it('shows a service name from the address as text, and says it has no event there', async () => {
    const name = '<img src=x id=injected>';
    await page.goto(`${keyscope.url}/routing-events?service=${encodeURIComponent(name)}`);
    const empty = page.locator('main .empty');
    await empty.waitFor();
    expect(await empty.textContent()).toContain(`no routing event in ${name}`);
    expect(await page.locator('#injected').count()).toBe(0);
  });
});
