import { describe, expect, it } from 'vitest';
import {
  isWhole,
  MIN_WINDOW_MILLIS,
  panWindow,
  windowBetween,
  zoomWindow,
} from '../../src/web/page/timeline-window.ts';

const whole = { startMillis: 10_000, endMillis: 12_000 };

describe('the timeline window', () => {
  it('halves around its middle on zoom in and comes back to the whole extent on zoom out', () => {
    const zoomed = zoomWindow(whole, whole, 0.5);
    expect(zoomed).toEqual({ startMillis: 10_500, endMillis: 11_500 });
    expect(isWhole(zoomed, whole)).toBe(false);
    expect(zoomWindow(zoomed, whole, 2)).toEqual(whole);
    expect(zoomWindow(whole, whole, 2)).toEqual(whole);
  });

  it('keeps the anchored time in place when zooming around it', () => {
    const zoomed = zoomWindow(whole, whole, 0.5, 10_400);
    // 10 400 sat at a fifth of the window; it still does.
    expect((10_400 - zoomed.startMillis) / (zoomed.endMillis - zoomed.startMillis)).toBeCloseTo(0.2, 9);
  });

  it('never gets narrower than the narrowest window', () => {
    let window = whole;
    for (let i = 0; i < 20; i++) window = zoomWindow(window, whole, 0.5);
    expect(window.endMillis - window.startMillis).toBe(MIN_WINDOW_MILLIS);
    expect(windowBetween(whole, 11_000, 11_001).endMillis - 11_000).toBe(MIN_WINDOW_MILLIS);
  });

  it('moves by a share of its width and stops at either end of the extent', () => {
    const zoomed = { startMillis: 10_500, endMillis: 11_000 };
    expect(panWindow(zoomed, whole, 0.5)).toEqual({ startMillis: 10_750, endMillis: 11_250 });
    expect(panWindow(zoomed, whole, -5)).toEqual({ startMillis: 10_000, endMillis: 10_500 });
    expect(panWindow(zoomed, whole, 5)).toEqual({ startMillis: 11_500, endMillis: 12_000 });
  });

  it('takes a dragged window in either direction, cut to the extent', () => {
    expect(windowBetween(whole, 11_200, 10_800)).toEqual({ startMillis: 10_800, endMillis: 11_200 });
    expect(windowBetween(whole, 9_000, 10_500)).toEqual({ startMillis: 10_000, endMillis: 10_500 });
  });
});
