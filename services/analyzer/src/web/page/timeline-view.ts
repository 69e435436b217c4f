import type { RoutingEventJson } from './api-types.ts';
import { el, replaceChildren, svg } from './element-builder.ts';
import { formatClock, formatDuration } from './time-format.ts';
import { drawTimeline, type Timeline } from './timeline.ts';
import { type KeyedAttempt, type TimeWindow, timelineExtent } from './timeline-layout.ts';
import { isWhole, MIN_WINDOW_MILLIS, panWindow, windowBetween, zoomWindow } from './timeline-window.ts';

export interface TimelineViewOptions {
  attempts: readonly KeyedAttempt[];
  events: readonly RoutingEventJson[];
  /** A mark was clicked: the page pins that key. */
  onSelect?: (key: string) => void;
}

export interface TimelineView {
  /** Highlights one key's marks, kept across zooms and redraws; null clears. */
  select(key: string | null): void;
}

/** A drag shorter than this is a click (on a mark, to pin its key), not a window. */
const MIN_DRAG_PIXELS = 6;
/** Narrower than this the timeline scrolls sideways inside its frame rather than squeezing. */
const MIN_WIDTH = 640;

/**
 * The timeline inside `figure` (already in the document), with its zoom: drag across the plot to
 * show that window, or use the buttons (Zoom in, Zoom out, Show earlier, Show later, Reset zoom)
 * or, on the focused timeline, + − ← → and 0. Every zoom redraws at the same width, so glyphs and
 * text keep their size and the axis labels the window; it also redraws when the width changes.
 */
export function showTimeline(figure: HTMLElement, options: TimelineViewOptions): TimelineView {
  const whole = timelineExtent(options.attempts, options.events);
  let window: TimeWindow = whole;
  let selected: string | null = null;
  let timeline: Timeline | null = null;

  const button = (label: string, text: string, action: () => TimeWindow) => {
    const element = el('button', { type: 'button', class: 'secondary small', 'aria-label': label }, text);
    element.addEventListener('click', () => {
      if (element.getAttribute('aria-disabled') !== 'true') show(action());
    });
    return element;
  };
  const zoomIn = button('Zoom in', '+ Zoom in', () => zoomWindow(window, whole, 0.5));
  const zoomOut = button('Zoom out', '− Zoom out', () => zoomWindow(window, whole, 2));
  const earlier = button('Show earlier', '← Earlier', () => panWindow(window, whole, -0.5));
  const later = button('Show later', 'Later →', () => panWindow(window, whole, 0.5));
  const reset = button('Reset zoom', 'Show all', () => whole);
  const status = el('p', { class: 'timeline-window', 'aria-live': 'polite' });
  const frame = el('div', {
    class: 'timeline-scroll',
    tabindex: 0,
    role: 'group',
    'aria-label': 'Timeline. Drag across it, or press + and − to zoom, ← and → to move, 0 to show all',
    'aria-keyshortcuts': '+ - ArrowLeft ArrowRight 0',
  });
  replaceChildren(
    figure,
    el(
      'div',
      { class: 'timeline-toolbar' },
      el(
        'div',
        { class: 'actions', role: 'group', 'aria-label': 'Zoom the timeline' },
        zoomIn,
        zoomOut,
        earlier,
        later,
        reset,
      ),
      status,
    ),
    frame,
    el(
      'figcaption',
      { class: 'visually-hidden' },
      'Timeline of the attempts; the same attempts are listed in the tables below.',
    ),
  );

  let drawnWidth = 0;
  const draw = () => {
    drawnWidth = Math.max(frame.clientWidth, MIN_WIDTH);
    timeline = drawTimeline({ ...options, width: drawnWidth, window });
    replaceChildren(frame, timeline.element);
    timeline.select(selected);
    timeline.fitLabels();
    const zoomed = !isWhole(window, whole);
    const disable = (element: HTMLButtonElement, disabled: boolean) =>
      element.setAttribute('aria-disabled', String(disabled));
    disable(zoomIn, window.endMillis - window.startMillis <= MIN_WINDOW_MILLIS);
    disable(zoomOut, !zoomed);
    disable(reset, !zoomed);
    disable(earlier, window.startMillis <= whole.startMillis);
    disable(later, window.endMillis >= whole.endMillis);
    status.textContent = zoomed
      ? `Showing ${describeWindow(window)} of ${describeWindow(whole)}`
      : `Showing all: ${describeWindow(whole)}. Drag across the timeline to zoom in.`;
  };
  const show = (next: TimeWindow) => {
    window = next;
    draw();
  };

  frame.addEventListener('keydown', (event) => {
    if (event.target !== frame || event.altKey || event.ctrlKey || event.metaKey) return;
    const zoomed = !isWhole(window, whole);
    const next =
      event.key === '+' || event.key === '='
        ? zoomWindow(window, whole, 0.5)
        : event.key === '-' || event.key === '_'
          ? zoomWindow(window, whole, 2)
          : event.key === '0'
            ? whole
            : // Unzoomed, the arrows scroll a timeline wider than the screen, as in any frame.
              zoomed && event.key === 'ArrowLeft'
              ? panWindow(window, whole, -0.25)
              : zoomed && event.key === 'ArrowRight'
                ? panWindow(window, whole, 0.25)
                : null;
    if (next === null) return;
    event.preventDefault();
    show(next);
  });

  listenForDrags(
    frame,
    () => timeline,
    (from, to) => show(windowBetween(whole, from, to)),
  );

  // The frame, not the window: a page scrollbar appearing narrows it without a window resize.
  let resizing: ReturnType<typeof setTimeout> | undefined;
  new ResizeObserver(() => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      if (Math.max(frame.clientWidth, MIN_WIDTH) !== drawnWidth) draw();
    }, 150);
  }).observe(frame);

  draw();
  return {
    select(key) {
      selected = key;
      timeline?.select(key);
      timeline?.fitLabels();
    },
  };
}

/**
 * A mouse or pen dragged across the plot: a band follows it, and on release `zoomTo` gets the
 * times under both ends. Touch is left to scroll the frame; the buttons zoom there.
 */
function listenForDrags(
  frame: HTMLElement,
  current: () => Timeline | null,
  zoomTo: (fromMillis: number, toMillis: number) => void,
): void {
  let drag: {
    pointerId: number;
    fromX: number;
    band: SVGRectElement;
    timeline: Timeline;
    captured: boolean;
  } | null = null;
  let swallowClick = false;
  const localX = (timeline: Timeline, clientX: number) => {
    const plot = timeline.plot;
    const x = clientX - timeline.element.getBoundingClientRect().left;
    return Math.min(Math.max(x, plot.left), plot.right);
  };
  const end = () => {
    drag?.band.remove();
    drag = null;
  };

  frame.addEventListener('pointerdown', (event) => {
    swallowClick = false;
    const timeline = current();
    if (timeline === null || event.button !== 0 || event.pointerType === 'touch') return;
    const x = event.clientX - timeline.element.getBoundingClientRect().left;
    if (x < timeline.plot.left || x > timeline.plot.right) return;
    const { top, bottom } = timeline.plot;
    const band = svg('rect', { x, y: top, width: 0, height: bottom - top, class: 'zoom-band' });
    timeline.element.append(band);
    drag = { pointerId: event.pointerId, fromX: x, band, timeline, captured: false };
  });
  frame.addEventListener('pointermove', (event) => {
    if (drag === null || event.pointerId !== drag.pointerId) return;
    const x = localX(drag.timeline, event.clientX);
    // Captured only once it is a drag: a click must still reach the mark under the pointer.
    if (!drag.captured && Math.abs(x - drag.fromX) >= MIN_DRAG_PIXELS) {
      frame.setPointerCapture(event.pointerId);
      drag.captured = true;
    }
    drag.band.setAttribute('x', String(Math.min(x, drag.fromX)));
    drag.band.setAttribute('width', String(Math.abs(x - drag.fromX)));
  });
  frame.addEventListener('pointerup', (event) => {
    if (drag === null || event.pointerId !== drag.pointerId) return;
    const { timeline, fromX } = drag;
    const toX = localX(timeline, event.clientX);
    end();
    if (Math.abs(toX - fromX) < MIN_DRAG_PIXELS) return;
    swallowClick = true;
    zoomTo(timeline.timeAt(fromX), timeline.timeAt(toX));
  });
  frame.addEventListener('pointercancel', end);
  // The click that ends a drag is not a click on the mark it started over.
  frame.addEventListener(
    'click',
    (event) => {
      if (!swallowClick) return;
      swallowClick = false;
      event.stopPropagation();
    },
    true,
  );
}

function describeWindow(window: TimeWindow): string {
  const width = window.endMillis - window.startMillis;
  const withMillis = width < 60_000;
  const clock = (millis: number) => formatClock(new Date(millis).toISOString(), withMillis);
  return `${clock(window.startMillis)} – ${clock(window.endMillis)} (${formatDuration(width)})`;
}
