import type { AttemptJson, RoutingEventJson } from './api-types.ts';
import {
  ARROW_MARKER,
  EVENT_PATTERN,
  ensureGlyphDefinitions,
  failedEndGlyph,
  outcomeGlyph,
  sendGlyph,
} from './attempt-glyphs.ts';
import { svg } from './element-builder.ts';
import { formatClock, formatDuration, timeZoneName } from './time-format.ts';
import {
  type KeyedAttempt,
  LANE_HEIGHT,
  type Lane,
  layoutTimeline,
  shorten,
  type TimeWindow,
} from './timeline-layout.ts';
import { OUTCOME_LABELS, ROUTING_LABELS } from './vocabulary.ts';

export interface TimelineOptions {
  attempts: readonly KeyedAttempt[];
  events: readonly RoutingEventJson[];
  width: number;
  /** The part of the extent to show; the whole extent when absent. */
  window?: TimeWindow;
  /** A mark was clicked: the page pins that key. */
  onSelect?: (key: string) => void;
}

export interface Timeline {
  readonly element: SVGSVGElement;
  /** Where the plot (right of the lane names, below the axis) lies in the drawing's pixels. */
  readonly plot: { left: number; right: number; top: number; bottom: number };
  /** The time drawn at pixel `x` of the drawing. */
  timeAt(x: number): number;
  /** Highlights one key's marks and joins them in time order; null clears. */
  select(key: string | null): void;
  /**
   * Moves labels that the browser's fonts made wider than estimated back inside the drawing; call
   * once the element is in the document (text has no size before).
   */
  fitLabels(): void;
}

interface DrawnMark {
  element: SVGGElement;
  attempt: AttemptJson;
  /** Where the attempt starts; null when it started before the window shown. */
  cx: number | null;
  cy: number;
}

/** Where labels may go: right of the lane names, inside the drawing's right edge. */
interface LabelBounds {
  left: number;
  right: number;
}

let instances = 0;

/**
 * The incident's attempts over time as SVG: one lane per dedup store (grouped by region and
 * cluster), client sends below, each attempt a bar from start to end with its outcome's shape at
 * the start, the routing event's window shaded and named. All text goes in as text nodes.
 */
export function drawTimeline(options: TimelineOptions): Timeline {
  ensureGlyphDefinitions();
  const id = `timeline-${++instances}`;
  const layout = layoutTimeline(
    options.attempts,
    options.events,
    options.width,
    (millis, step) => formatClock(new Date(millis).toISOString(), step < 1000),
    options.window,
  );
  const { lanes, x, startMillis, endMillis } = layout;
  const inWindow = (millis: number) => millis >= startMillis && millis <= endMillis;
  const bounds: LabelBounds = { left: layout.plotLeft + 2, right: layout.width - 4 };
  const shownAttempts = options.attempts.filter(
    ({ attempt }) => Date.parse(attempt.end) >= startMillis && Date.parse(attempt.start) <= endMillis,
  );
  const hidden = options.attempts.length - shownAttempts.length;
  const shownEvents = options.events.filter(
    (event) => Date.parse(event.end) >= startMillis && Date.parse(event.start) <= endMillis,
  );
  const storeLanes = lanes.filter((lane) => lane.kind === 'store');
  const executions = options.attempts.filter(
    ({ attempt }) => attempt.kind === 'server' && attempt.outcome === 'miss',
  );
  const keys = new Set(options.attempts.map(({ key }) => key));

  const root = svg(
    'svg',
    {
      class: 'timeline timeline-plot',
      id,
      width: layout.width,
      height: layout.height,
      viewBox: `0 0 ${layout.width} ${layout.height}`,
      role: 'img',
      'aria-labelledby': `${id}-title ${id}-desc`,
      'data-window-start': startMillis,
      'data-window-end': endMillis,
    },
    svg('title', { id: `${id}-title` }, 'Attempts over time, one lane per dedup store'),
    svg(
      'desc',
      { id: `${id}-desc` },
      `${storeLanes.length} dedup store${storeLanes.length === 1 ? '' : 's'}, ${keys.size} key${keys.size === 1 ? '' : 's'}, ` +
        `${executions.length} execution${executions.length === 1 ? '' : 's'}` +
        options.events.map((event) => `; ${event.description}`).join('') +
        (hidden === 0
          ? ''
          : `. Zoomed to ${formatClock(new Date(startMillis).toISOString())}–${formatClock(new Date(endMillis).toISOString())}: ${hidden} attempt${hidden === 1 ? '' : 's'} outside it not drawn`) +
        '. The attempts are listed as text in the tables below.',
    ),
  );

  // Lanes first, so everything else draws over their backgrounds.
  const laneLayer = svg('g', { class: 'lanes' });
  for (const group of layout.groups) {
    laneLayer.append(svg('text', { x: 8, y: group.y + 18, class: 'lane-group' }, group.label));
  }
  const labelChars = Math.floor(layout.labelWidth / 7.2);
  lanes.forEach((lane, index) => {
    const row = svg(
      'g',
      { class: `lane lane-${lane.kind}`, 'data-lane': lane.kind, 'data-lane-id': lane.id },
      svg('rect', {
        x: 0,
        y: lane.y,
        width: layout.width,
        height: LANE_HEIGHT,
        class: index % 2 === 0 ? 'lane-band' : 'lane-band lane-band-alt',
      }),
      svg(
        'text',
        { x: 16, y: lane.y + 17, class: 'lane-label' },
        svg('title', {}, lane.label),
        shorten(lane.label, labelChars),
      ),
      svg(
        'text',
        { x: 16, y: lane.y + 32, class: 'lane-detail' },
        svg('title', {}, lane.detail),
        shorten(lane.detail, labelChars + 6),
      ),
    );
    laneLayer.append(row);
  });
  laneLayer.append(
    svg('line', {
      x1: layout.plotLeft,
      x2: layout.plotLeft,
      y1: layout.lanesTop,
      y2: layout.lanesBottom,
      class: 'plot-edge',
    }),
  );

  const axis = svg(
    'g',
    { class: 'axis' },
    svg('text', { x: 8, y: layout.axisY - 4, class: 'axis-title' }, `Time (${timeZoneName()})`),
  );
  for (const tick of layout.ticks) {
    // Centred on its tick, unless that would push it past an edge of the plot.
    const half = (tick.label.length * TICK_CHAR_WIDTH) / 2;
    const labelX = Math.min(Math.max(tick.x, bounds.left + half), bounds.right - half);
    axis.append(
      svg('line', { x1: tick.x, x2: tick.x, y1: layout.axisY, y2: layout.lanesBottom, class: 'tick-line' }),
      svg(
        'text',
        { x: labelX, y: layout.axisY - 4, class: 'tick-label', 'data-millis': tick.millis },
        tick.label,
      ),
    );
  }

  const eventLayer = svg('g', { class: 'routing-events' });
  shownEvents.forEach((event, index) => {
    const startsInside = inWindow(Date.parse(event.start));
    const endsInside = inWindow(Date.parse(event.end));
    const x1 = startsInside ? x(event.start) : layout.plotLeft;
    const x2 = endsInside ? Math.max(x(event.end), x1 + 2) : layout.plotRight;
    const where = event.node || event.cluster || event.region;
    const labelY = 14 + (index % 2) * 17;
    const times = `${formatClock(event.start, false)}–${formatClock(event.end, false)} (${formatDuration(Date.parse(event.end) - Date.parse(event.start))}${event.ended ? '' : ', still open'})`;
    const prefix = `${ROUTING_LABELS[event.type]}: `;
    // From the window's start, or further left where the label would pass the right edge; the
    // place is shortened to what the plot holds.
    const roomChars =
      Math.floor((bounds.right - bounds.left) / LABEL_CHAR_WIDTH) - prefix.length - times.length - 3;
    const label = `${prefix}${shorten(where, Math.max(8, Math.min(40, roomChars)))} · ${times}`;
    const labelX = Math.max(bounds.left, Math.min(x1 + 4, bounds.right - label.length * LABEL_CHAR_WIDTH));
    eventLayer.append(
      svg(
        'g',
        { class: 'routing-event', 'data-event': event.id },
        svg('title', {}, event.description),
        svg('rect', {
          x: x1,
          y: layout.lanesTop,
          width: x2 - x1,
          height: layout.lanesBottom - layout.lanesTop,
          class: 'event-window',
          fill: `url(#${EVENT_PATTERN})`,
        }),
        startsInside
          ? svg('line', { x1, x2: x1, y1: labelY + 4, y2: layout.lanesBottom, class: 'event-edge' })
          : null,
        endsInside
          ? svg('line', { x1: x2, x2, y1: layout.lanesTop, y2: layout.lanesBottom, class: 'event-edge' })
          : null,
        svg('text', { x: labelX, y: labelY, class: 'event-label' }, label),
      ),
    );
  });

  const markLayer = svg('g', { class: 'marks' });
  const selectedLayer = svg('g', { class: 'selected-marks' });
  const overlay = svg('g', { class: 'selection-overlay', 'aria-hidden': 'true' });
  const marksByKey = new Map<string, DrawnMark[]>();
  const laneOf = (attempt: AttemptJson): Lane | undefined => {
    if (attempt.kind === 'server')
      return lanes.find((lane) => lane.kind === 'store' && lane.id === attempt.store);
    if (attempt.kind === 'client')
      return lanes.find((lane) => lane.kind === 'client' && lane.id === `${attempt.service} ${attempt.node}`);
    return lanes.find(
      (lane) =>
        lane.kind === 'store' && lane.service === attempt.service && lane.nodes.includes(attempt.node),
    );
  };

  // Arrivals (the request's span on a node) go underneath, as the band the store check sits in.
  const ordered = [...shownAttempts].sort(
    (a, b) => (a.attempt.kind === 'arrival' ? 0 : 1) - (b.attempt.kind === 'arrival' ? 0 : 1),
  );
  for (const { key, attempt } of ordered) {
    const lane = laneOf(attempt);
    if (lane === undefined) continue;
    const cy = lane.y + LANE_HEIGHT / 2;
    // An attempt reaching past the window is cut at the plot's edge, and its start's (or end's)
    // glyph, being outside the window, is not drawn.
    const startsInside = Date.parse(attempt.start) >= startMillis;
    const endsInside = Date.parse(attempt.end) <= endMillis;
    const x1 = startsInside ? x(attempt.start) : layout.plotLeft;
    const x2 = Math.max(endsInside ? x(attempt.end) : layout.plotRight, x1 + 2);
    const mark = svg('g', {
      class: `mark mark-${attempt.kind}${attempt.kind === 'server' ? ` outcome-${attempt.outcome}` : ''}`,
      'data-key': key,
      'data-kind': attempt.kind,
      'data-outcome': attempt.kind === 'server' ? attempt.outcome : null,
      'data-store': attempt.kind === 'server' ? attempt.store : null,
    });
    mark.append(svg('title', {}, describeMark(key, attempt)));
    if (attempt.kind === 'arrival') {
      mark.append(svg('rect', { x: x1, y: cy - 9, width: x2 - x1, height: 18, class: 'arrival-band' }));
    } else if (attempt.kind === 'server') {
      mark.append(
        svg('rect', { x: x1, y: cy - 2, width: x2 - x1, height: 4, class: `bar bar-${attempt.outcome}` }),
      );
      if (startsInside) mark.append(outcomeGlyph(attempt.outcome, x1, cy));
    } else if (attempt.kind === 'effect') {
      mark.append(svg('rect', { x: x1, y: cy + 3, width: x2 - x1, height: 3, class: 'bar bar-effect' }));
      if (attempt.failed && endsInside) mark.append(failedEndGlyph(x2, cy + 4.5));
    } else {
      mark.append(svg('rect', { x: x1, y: cy - 1.5, width: x2 - x1, height: 3, class: 'bar bar-send' }));
      if (startsInside) mark.append(sendGlyph(x1, cy));
      if (endsInside && (attempt.error !== '' || attempt.statusCode === 0 || attempt.statusCode >= 500))
        mark.append(failedEndGlyph(x2, cy));
    }
    if (attempt.kind !== 'arrival' && options.onSelect !== undefined) {
      const select = options.onSelect;
      mark.addEventListener('click', () => select(key));
    }
    markLayer.append(mark);
    const drawn = marksByKey.get(key) ?? [];
    drawn.push({ element: mark, attempt, cx: startsInside ? x1 : null, cy });
    marksByKey.set(key, drawn);
  }

  root.append(laneLayer, axis, eventLayer, markLayer, selectedLayer, overlay);

  let selected: string | null = null;
  const fitLabels = () => {
    if (!root.isConnected) return;
    for (const label of root.querySelectorAll<SVGTextElement>('.mark-label, .tick-label, .event-label'))
      fitInside(label, bounds);
  };
  return {
    element: root,
    plot: {
      left: layout.plotLeft,
      right: layout.plotRight,
      top: layout.lanesTop,
      bottom: layout.lanesBottom,
    },
    timeAt: layout.timeAt,
    fitLabels,
    select(key) {
      if (key === selected) return;
      for (const mark of marksByKey.get(selected ?? '') ?? []) {
        mark.element.classList.remove('selected');
        markLayer.append(mark.element);
      }
      overlay.replaceChildren();
      selected = key !== null && marksByKey.has(key) ? key : null;
      root.classList.toggle('has-selection', selected !== null);
      if (selected === null) return;
      const marks = marksByKey.get(selected)!;
      for (const mark of marks) {
        mark.element.classList.add('selected');
        selectedLayer.append(mark.element);
      }
      drawSelection(overlay, marks, bounds);
      fitLabels();
    },
  };
}

/** Shifts a text element sideways so that its measured box lies within `bounds`. */
function fitInside(label: SVGTextElement, bounds: LabelBounds): void {
  const box = label.getBBox();
  const shift =
    box.x + box.width > bounds.right
      ? bounds.right - (box.x + box.width)
      : box.x < bounds.left
        ? bounds.left - box.x
        : 0;
  if (shift !== 0) label.setAttribute('x', String(Number(label.getAttribute('x')) + shift));
}

/** The selected key's story: a connector through its sends and store checks, and a word on each. */
function drawSelection(overlay: SVGGElement, marks: DrawnMark[], bounds: LabelBounds): void {
  // Marks that started before the window have no glyph to join or to label.
  const path = marks
    .filter((mark): mark is DrawnMark & { cx: number } => mark.attempt.kind !== 'arrival' && mark.cx !== null)
    .sort(
      (a, b) =>
        Date.parse(a.attempt.start) - Date.parse(b.attempt.start) || order(a.attempt) - order(b.attempt),
    );
  // One arrow per step, stopping at the next glyph's edge so the arrowhead stays visible.
  for (let index = 1; index < path.length; index++) {
    const from = path[index - 1]!;
    const to = path[index]!;
    const length = Math.hypot(to.cx - from.cx, to.cy - from.cy);
    if (length < 12) continue;
    const stop = (length - 9) / length;
    const x2 = from.cx + (to.cx - from.cx) * stop;
    const y2 = from.cy + (to.cy - from.cy) * stop;
    overlay.append(
      svg('path', {
        d: `M${from.cx.toFixed(1)},${from.cy.toFixed(1)} L${x2.toFixed(1)},${y2.toFixed(1)}`,
        class: 'connector',
        'marker-end': `url(#${ARROW_MARKER})`,
      }),
    );
  }
  // Executions are counted per tier: a payment and the ledger write it caused are one run each.
  const tierOf = (attempt: AttemptJson) => `${attempt.service} ${attempt.operation}`;
  const servers = path.filter((mark) => mark.attempt.kind === 'server');
  const tiers = new Set(servers.map((mark) => tierOf(mark.attempt)));
  const runs = new Map<string, number>();
  const placed: Box[] = [];
  for (const mark of path) {
    const { attempt } = mark;
    let text: string;
    if (attempt.kind === 'server') {
      const tier = tierOf(attempt);
      const run = attempt.outcome === 'miss' ? (runs.get(tier) ?? 0) + 1 : 0;
      if (run > 0) runs.set(tier, run);
      const what = run > 0 ? `executed #${run}` : OUTCOME_LABELS[attempt.outcome];
      text = tiers.size > 1 ? `${attempt.service}: ${what}` : what;
    } else if (attempt.kind === 'client') {
      const result =
        attempt.error !== ''
          ? attempt.error
          : attempt.statusCode === 0
            ? 'no answer'
            : String(attempt.statusCode);
      text = `send #${attempt.resendCount} → ${result}`;
    } else continue;
    const spot = placeLabel(placed, mark.cx, mark.cy, text.length * LABEL_CHAR_WIDTH, bounds);
    overlay.append(
      svg(
        'text',
        {
          x: spot.x,
          y: spot.y,
          'text-anchor': spot.anchor,
          class: `mark-label${attempt.kind === 'server' && attempt.outcome === 'miss' ? ' mark-label-exec' : ''}`,
        },
        text,
      ),
    );
  }
}

interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** Bold 12px text, a little generous, so estimated boxes err towards not touching. */
const LABEL_CHAR_WIDTH = 7.2;
/** The axis's 11.5px tabular digits. */
const TICK_CHAR_WIDTH = 6.8;

/**
 * Where a mark's label goes: right of it above, then below, then left of it; the first spot that
 * lies within `bounds` and overlaps no label placed before (marks of one key cluster when retries
 * are quick). Near an edge no spot may fit: the first one is moved inside.
 */
function placeLabel(
  placed: Box[],
  cx: number,
  cy: number,
  width: number,
  bounds: LabelBounds,
): { x: number; y: number; anchor: 'start' | 'end' } {
  const candidates = [
    { x: cx + 9, y: cy - 9, anchor: 'start' as const },
    { x: cx + 9, y: cy + 19, anchor: 'start' as const },
    { x: cx - 9, y: cy - 9, anchor: 'end' as const },
    { x: cx - 9, y: cy + 19, anchor: 'end' as const },
    { x: cx + 9, y: cy - 22, anchor: 'start' as const },
  ];
  const boxOf = (spot: (typeof candidates)[number]): Box => {
    const left = spot.anchor === 'start' ? spot.x : spot.x - width;
    return { left, right: left + width, top: spot.y - 12, bottom: spot.y + 3 };
  };
  const fits = (box: Box) => box.left >= bounds.left && box.right <= bounds.right;
  const free = candidates.find((spot) => {
    const box = boxOf(spot);
    return (
      fits(box) &&
      placed.every(
        (other) =>
          box.right < other.left ||
          box.left > other.right ||
          box.bottom < other.top ||
          box.top > other.bottom,
      )
    );
  });
  const inside = candidates.find((spot) => fits(boxOf(spot)));
  const chosen = free ?? inside ?? moveInside(candidates[0]!, width, bounds);
  placed.push(boxOf(chosen));
  return chosen;
}

/** A label wider than the room on both sides of its mark: start it where it ends at the edge. */
function moveInside(
  spot: { x: number; y: number; anchor: 'start' | 'end' },
  width: number,
  bounds: LabelBounds,
): { x: number; y: number; anchor: 'start' | 'end' } {
  return { x: Math.max(bounds.left, Math.min(spot.x, bounds.right - width)), y: spot.y, anchor: 'start' };
}

/** A send precedes the store check it caused when both start in the same millisecond. */
function order(attempt: AttemptJson): number {
  return attempt.kind === 'client' ? 0 : attempt.kind === 'arrival' ? 1 : 2;
}

function describeMark(key: string, attempt: AttemptJson): string {
  const when = `${formatClock(attempt.start)} for ${formatDuration(attempt.durationMillis)}`;
  const where = `${attempt.service} on ${attempt.node}`;
  if (attempt.kind === 'server') {
    return `${OUTCOME_LABELS[attempt.outcome]} · key ${key} · store ${attempt.store} · ${where} · ${when} · trace ${attempt.traceId}`;
  }
  if (attempt.kind === 'client') {
    const result =
      attempt.error !== ''
        ? attempt.error
        : attempt.statusCode === 0
          ? 'no answer'
          : `HTTP ${attempt.statusCode}`;
    return `client send #${attempt.resendCount} → ${attempt.target || 'unknown target'} (${result}) · key ${key} · ${where} · ${when} · trace ${attempt.traceId}`;
  }
  if (attempt.kind === 'effect') {
    return `side effect ${attempt.operation} ${attempt.failed ? 'failed' : 'took place'} · key ${key} · ${where} · ${when} · trace ${attempt.traceId}`;
  }
  return `request reached ${where} · key ${key} · ${when} · trace ${attempt.traceId}`;
}
