import type { TimeWindow } from './timeline-layout.ts';

/**
 * The window of time the timeline is zoomed to, as arithmetic on windows without the DOM: every
 * result lies inside the whole extent and is at least MIN_WINDOW_MILLIS wide (or the whole extent,
 * when that is narrower).
 */

/** Retries of one key can land a millisecond apart; narrower than this, nothing more separates. */
export const MIN_WINDOW_MILLIS = 10;

const widthOf = (window: TimeWindow) => window.endMillis - window.startMillis;

/** Whether `window` shows all of `whole`. */
export function isWhole(window: TimeWindow, whole: TimeWindow): boolean {
  return window.startMillis <= whole.startMillis && window.endMillis >= whole.endMillis;
}

/**
 * The window `factor` times as wide (below 1 zooms in), keeping `anchorMillis` where it is on
 * screen: the middle for the buttons, the pointer for a wheel.
 */
export function zoomWindow(
  window: TimeWindow,
  whole: TimeWindow,
  factor: number,
  anchorMillis = (window.startMillis + window.endMillis) / 2,
): TimeWindow {
  const width = widthOf(window);
  const next = Math.min(Math.max(width * factor, MIN_WINDOW_MILLIS), widthOf(whole));
  const startMillis = anchorMillis - (anchorMillis - window.startMillis) * (next / width);
  return placed(startMillis, next, whole);
}

/** The window moved by `fraction` of its width, later for positive, stopping at the extent's ends. */
export function panWindow(window: TimeWindow, whole: TimeWindow, fraction: number): TimeWindow {
  const width = widthOf(window);
  return placed(window.startMillis + width * fraction, width, whole);
}

/** The window between two times in either order, as a drag across the plot picks it. */
export function windowBetween(whole: TimeWindow, aMillis: number, bMillis: number): TimeWindow {
  const startMillis = Math.max(Math.min(aMillis, bMillis), whole.startMillis);
  const endMillis = Math.min(Math.max(aMillis, bMillis), whole.endMillis);
  const width = Math.min(Math.max(endMillis - startMillis, MIN_WINDOW_MILLIS), widthOf(whole));
  return placed(startMillis, width, whole);
}

/** `width` from `startMillis`, shifted to lie inside `whole`; the whole itself when it fills it. */
function placed(startMillis: number, width: number, whole: TimeWindow): TimeWindow {
  // Within a microsecond of the whole is the whole: zooming out lands exactly where it started.
  if (width >= widthOf(whole) - 0.001) return { ...whole };
  const start = Math.min(Math.max(startMillis, whole.startMillis), whole.endMillis - width);
  return { startMillis: start, endMillis: start + width };
}
