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
 * The timeline of the key and incident pages: every mark and label inside the drawing, whatever
 * sits at its edges, and zooming to a window with the buttons, the keyboard or a drag.
 */

const KEY = 'order-7';
/** Pictures for a human to look at; the assertions measure boxes. */
const SHOTS = mkdtempSync(join(tmpdir(), 'keyscope-timeline-'));

let keyscope: RunningKeyscope;
let browser: Chromium;
let page: Page;
let incidentId: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  [keyscope, browser] = await Promise.all([startKeyscope({ tokens: false }), launchChromium()]);
  const now = Date.now();
  await feedSpans(
    keyscope,
    retriedKey({ key: KEY, traceNumber: 1, startUnixMillis: now - 60_000, retryAfterMillis: 2000 }),
  );
  const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: now - 5 * 60_000 }), { seed: 3 });
  await feedSpans(keyscope, spans);
  const { items } = await keyscope.api<{ items: { id: string; keys: number }[] }>(
    '/api/v1/incidents?class=cross_store_duplicate',
  );
  incidentId = [...items].sort((a, b) => b.keys - a.keys)[0]!.id;
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

interface Box {
  what: string;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** What the timeline draws that must stay visible: marks, their labels, tick and event labels. */
const DRAWN = '.mark, .mark-label, .tick-label, .event-label, .lane-label, .lane-detail';

async function boxesOf(timeline: Locator): Promise<Box[]> {
  return timeline.locator(DRAWN).evaluateAll((elements) =>
    elements.map((element) => {
      const box = element.getBoundingClientRect();
      return {
        what: `${element.getAttribute('class')} ${element.getAttribute('data-kind') ?? ''} ${element.textContent}`,
        left: box.left,
        right: box.right,
        top: box.top,
        bottom: box.bottom,
      };
    }),
  );
}

/** The part of the page the timeline shows: its scroll box inside the border, and the plot's left edge. */
async function frameOf(
  page: Page,
): Promise<{ left: number; right: number; top: number; bottom: number; plotLeft: number }> {
  const frame = await page.locator('.timeline-scroll').evaluate((element) => {
    const box = element.getBoundingClientRect();
    const left = box.left + element.clientLeft;
    const top = box.top + element.clientTop;
    return { left, right: left + element.clientWidth, top, bottom: top + element.clientHeight };
  });
  const edge = (await page.locator('svg.timeline-plot .plot-edge').boundingBox())!;
  return { ...frame, plotLeft: edge.x };
}

/** Everything drawn that sticks out of the frame, and marks that reach left of the plot. */
async function outside(page: Page): Promise<Box[]> {
  const frame = await frameOf(page);
  const boxes = await boxesOf(page.locator('svg.timeline-plot'));
  expect(boxes.length).toBeGreaterThan(0);
  return boxes.filter(
    (box) =>
      box.left < frame.left - 0.5 ||
      box.right > frame.right + 0.5 ||
      box.top < frame.top - 0.5 ||
      box.bottom > frame.bottom + 0.5 ||
      (box.what.startsWith('mark ') && box.left < frame.plotLeft - 0.5),
  );
}

/** The time window the timeline shows, and its tick labels' times. */
async function shown(page: Page): Promise<{ start: number; end: number; ticks: number[]; labels: string[] }> {
  const plot = page.locator('svg.timeline-plot');
  const start = Number(await plot.getAttribute('data-window-start'));
  const end = Number(await plot.getAttribute('data-window-end'));
  const ticks = await plot
    .locator('.tick-label')
    .evaluateAll((labels) => labels.map((label) => Number(label.getAttribute('data-millis'))));
  const labels = await plot.locator('.tick-label').allTextContents();
  return { start, end, ticks, labels };
}

/** When the key's two executions started, as the API reports them. */
async function executionStarts(): Promise<number[]> {
  const lookup = await keyscope.api<{ attempts: { kind: string; outcome?: string; start: string }[] }>(
    `/api/v1/keys/${encodeURIComponent(KEY)}`,
  );
  return lookup.attempts
    .filter((attempt) => attempt.kind === 'server' && attempt.outcome === 'miss')
    .map((attempt) => Date.parse(attempt.start))
    .sort((a, b) => a - b);
}

async function openKeyPage(): Promise<void> {
  await page.goto(`${keyscope.url}/keys/${encodeURIComponent(KEY)}`);
  await page.locator('svg.timeline-plot').waitFor();
}

describe('the timeline', () => {
  it("keeps every mark and label of the key page's timeline inside it, the last send at the right edge included", async () => {
    await openKeyPage();
    await page.locator('.timeline-section').screenshot({ path: join(SHOTS, 'key-timeline.png') });
    expect(await outside(page)).toEqual([]);
    // The retry's marks and labels are the rightmost: close to the edge, and still inside it.
    const frame = await frameOf(page);
    const labels = await boxesOf(page.locator('svg.timeline-plot .selection-overlay'));
    const rightmost = Math.max(...labels.map((box) => box.right));
    expect(rightmost).toBeGreaterThan(frame.right - 60);
    expect(labels.map((box) => box.what)).toContain('mark-label mark-label-exec  executed #2');
  });

  it("keeps every mark and label of the incident page's timeline inside it", async () => {
    await page.goto(`${keyscope.url}/incidents/${incidentId}`);
    await page.locator('svg.timeline-plot').waitFor();
    await page.locator('.timeline-section').screenshot({ path: join(SHOTS, 'incident-timeline.png') });
    expect(await outside(page)).toEqual([]);
  });

  it('still pins the key of a mark clicked without dragging', async () => {
    await page.goto(`${keyscope.url}/incidents/${incidentId}`);
    await page.locator('svg.timeline-plot').waitFor();
    await page.locator('.timeline-scroll').scrollIntoViewIfNeeded();
    const pinned = await page.locator('.selected-key h2 code').textContent();
    // The first glyph of another key that nothing covers (the pinned key's marks are drawn on top).
    const spot = await page.evaluate<{ x: number; y: number; key: string } | null>(`(() => {
      for (const glyph of document.querySelectorAll('svg.timeline-plot .marks .mark-server .glyph')) {
        const box = glyph.getBoundingClientRect();
        const x = box.left + box.width / 2;
        const y = box.top + box.height / 2;
        const mark = glyph.closest('.mark');
        if (document.elementFromPoint(x, y)?.closest('.mark') === mark) return { x, y, key: mark.dataset.key };
      }
      return null;
    })()`);
    expect(spot).not.toBeNull();
    expect(spot!.key).not.toBe(pinned);
    await page.mouse.click(spot!.x, spot!.y);
    await expect.poll(() => page.locator('.selected-key h2 code').textContent()).toBe(spot!.key);
    // A click is not a drag: the window is still the whole incident.
    expect(await page.locator('.timeline-window').textContent()).toMatch(/^Showing all/);
  });

  it('zooms in, out and back with the buttons, and the axis follows the window', async () => {
    await openKeyPage();
    const full = await shown(page);
    expect(full.ticks.length).toBeGreaterThan(2);

    await page.getByRole('button', { name: 'Zoom in' }).click();
    const zoomed = await shown(page);
    expect(zoomed.end - zoomed.start).toBeCloseTo((full.end - full.start) / 2, 0);
    expect(zoomed.start).toBeGreaterThan(full.start);
    expect(zoomed.end).toBeLessThan(full.end);
    expect(zoomed.labels).not.toEqual(full.labels);
    for (const tick of zoomed.ticks) {
      expect(tick).toBeGreaterThanOrEqual(zoomed.start);
      expect(tick).toBeLessThanOrEqual(zoomed.end);
    }
    expect(await page.locator('.timeline-window').textContent()).toContain('Showing');
    expect(await outside(page)).toEqual([]);

    await page.getByRole('button', { name: 'Zoom out' }).click();
    expect(await shown(page)).toEqual(full);

    await page.getByRole('button', { name: 'Zoom in' }).click();
    await page.getByRole('button', { name: 'Zoom in' }).click();
    await page.getByRole('button', { name: 'Show earlier' }).click();
    const earlier = await shown(page);
    expect(earlier.start).toBeLessThan(full.start + (full.end - full.start) * 0.375);
    await page.getByRole('button', { name: 'Reset zoom' }).click();
    expect(await shown(page)).toEqual(full);
  });

  it('zooms to the window dragged across, hiding the marks outside it', async () => {
    await openKeyPage();
    await page.locator('.timeline-scroll').scrollIntoViewIfNeeded();
    const executions = page.locator('svg.timeline-plot [data-kind="server"][data-outcome="miss"] .glyph');
    expect(await executions.count()).toBe(2);
    const bars = page.locator('svg.timeline-plot [data-kind="server"][data-outcome="miss"] .bar');
    const first = (await executions.nth(0).boundingBox())!;
    const firstBar = (await bars.nth(0).boundingBox())!;
    const second = (await executions.nth(1).boundingBox())!;
    const plot = (await page.locator('svg.timeline-plot').boundingBox())!;
    const y = plot.y + plot.height - 20;
    // From just before the first execution to half way to the retry: the retry is outside.
    const from = first.x - 10;
    const to = first.x + (second.x - first.x) / 2;
    const before = await shown(page);
    await page.mouse.move(from, y);
    await page.mouse.down();
    await page.mouse.move((from + to) / 2, y, { steps: 4 });
    await page.mouse.move(to, y, { steps: 4 });
    await page.mouse.up();

    const after = await shown(page);
    const [run1, run2] = await executionStarts();
    expect(after.end - after.start).toBeLessThan((before.end - before.start) / 1.8);
    // The window starts a few pixels' time before the first execution and ends before the retry.
    expect(after.start).toBeLessThan(run1!);
    expect(run1! - after.start).toBeLessThan((before.end - before.start) * 0.05);
    expect(after.end).toBeLessThan(run2!);
    for (const tick of after.ticks) {
      expect(tick).toBeGreaterThanOrEqual(after.start);
      expect(tick).toBeLessThanOrEqual(after.end);
    }
    expect(await executions.count()).toBe(1);
    // The first execution's bar is drawn as many times wider as the window got narrower.
    const zoomedBar = (await bars.nth(0).boundingBox())!;
    expect(zoomedBar.width / firstBar.width).toBeCloseTo(
      (before.end - before.start) / (after.end - after.start),
      0,
    );
    expect(await outside(page)).toEqual([]);
    await page.locator('.timeline-section').screenshot({ path: join(SHOTS, 'key-timeline-dragged.png') });
  });

  it('redraws to the width of a narrower window, keeping the zoom and every mark inside', async () => {
    await openKeyPage();
    await page.getByRole('button', { name: 'Zoom in' }).click();
    const zoomed = await shown(page);
    const plot = page.locator('svg.timeline-plot');
    const wide = Number(await plot.getAttribute('width'));
    await page.setViewportSize({ width: 1000, height: 900 });
    try {
      await expect.poll(async () => Number(await plot.getAttribute('width'))).toBeLessThan(wide);
      expect(await shown(page)).toMatchObject({ start: zoomed.start, end: zoomed.end });
      expect(await outside(page)).toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1440, height: 900 });
    }
  });

  it('zooms with the keyboard: the buttons by Enter, and + − 0 on the focused timeline', async () => {
    await openKeyPage();
    const full = await shown(page);
    await page.getByRole('button', { name: 'Zoom in' }).focus();
    await page.keyboard.press('Enter');
    const once = await shown(page);
    expect(once.end - once.start).toBeCloseTo((full.end - full.start) / 2, 0);

    await page.locator('.timeline-scroll').focus();
    await page.keyboard.press('+');
    const twice = await shown(page);
    expect(twice.end - twice.start).toBeCloseTo((full.end - full.start) / 4, 0);
    await page.keyboard.press('ArrowRight');
    expect((await shown(page)).start).toBeGreaterThan(twice.start);
    await page.keyboard.press('-');
    expect((await shown(page)).end - (await shown(page)).start).toBeCloseTo((full.end - full.start) / 2, 0);
    await page.keyboard.press('0');
    expect(await shown(page)).toEqual(full);
  });
});
