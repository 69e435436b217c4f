import type { AttemptJson, RoutingEventJson, ServerAttemptJson } from './api-types.ts';

/**
 * Where things go on the timeline, computed without the DOM: the lanes (one per dedup store,
 * grouped by region and cluster, then one per client node), the time scale and its ticks, for the
 * whole extent or a window of it.
 */

export interface KeyedAttempt {
  key: string;
  attempt: AttemptJson;
}

export interface Lane {
  kind: 'store' | 'client';
  /** The store id, or `service node` for a client lane. */
  id: string;
  label: string;
  detail: string;
  /** Nodes whose server spans land in this lane (arrivals are drawn in their node's store lane). */
  nodes: string[];
  service: string;
  y: number;
}

export interface LaneGroup {
  label: string;
  y: number;
}

export interface TimelineLayout {
  width: number;
  height: number;
  labelWidth: number;
  plotLeft: number;
  plotRight: number;
  axisY: number;
  lanesTop: number;
  lanesBottom: number;
  lanes: Lane[];
  groups: LaneGroup[];
  /** The window shown: the whole extent, or the part zoomed to. */
  startMillis: number;
  endMillis: number;
  /** Where a time is drawn; times outside the window land outside the plot. */
  x: (iso: string | number) => number;
  /** The time drawn at pixel `x`: the inverse of `x`, for dragging across the plot. */
  timeAt: (x: number) => number;
  ticks: { millis: number; x: number; label: string }[];
}

/** A span of time, in Unix milliseconds, start before end. */
export interface TimeWindow {
  startMillis: number;
  endMillis: number;
}

export const LANE_HEIGHT = 40;
const GROUP_HEIGHT = 26;
const AXIS_HEIGHT = 64;
const BOTTOM = 12;
/** Room between the plot's edges and the window's first and last moment: a glyph's half width and more. */
const EDGE_PADDING = 12;
const TICK_STEPS_MILLIS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000,
  600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000,
];

export function layoutTimeline(
  attempts: readonly KeyedAttempt[],
  events: readonly RoutingEventJson[],
  width: number,
  formatTick: (millis: number, stepMillis: number) => string,
  window?: TimeWindow,
): TimelineLayout {
  const labelWidth = width < 720 ? 170 : width < 1200 ? 270 : 330;
  const plotLeft = labelWidth + 16;
  const plotRight = width - 8;
  const axisY = AXIS_HEIGHT - 6;

  const stores = new Map<string, { attempts: ServerAttemptJson[]; nodes: Set<string> }>();
  const clients = new Map<string, { service: string; node: string }>();
  for (const { attempt } of attempts) {
    if (attempt.kind === 'server') {
      const entry = stores.get(attempt.store) ?? { attempts: [], nodes: new Set<string>() };
      entry.attempts.push(attempt);
      entry.nodes.add(attempt.node);
      stores.set(attempt.store, entry);
    } else if (attempt.kind === 'client') {
      clients.set(`${attempt.service} ${attempt.node}`, { service: attempt.service, node: attempt.node });
    }
  }

  // The service is worth its room in a lane's label only when the stores belong to several tiers.
  const oneService = new Set([...stores.values()].map((entry) => entry.attempts[0]!.service)).size === 1;
  const storeLanes = [...stores].map(([store, entry]) => {
    const first = entry.attempts[0]!;
    const nodes = [...entry.nodes].sort();
    const scope = first.scope === '' ? 'undeclared scope' : `${first.scope} scope`;
    const where = nodes.length === 1 ? `node ${nodes[0]}` : `${nodes.length} nodes`;
    return {
      group: groupLabel(first.region, first.cluster),
      lane: {
        kind: 'store' as const,
        id: store,
        label: store,
        detail: oneService ? `${scope} · ${where}` : `${first.service} · ${scope} · ${where}`,
        nodes,
        service: first.service,
        y: 0,
      },
    };
  });
  storeLanes.sort((a, b) => a.group.localeCompare(b.group) || a.lane.label.localeCompare(b.lane.label));

  const lanes: Lane[] = [];
  const groups: LaneGroup[] = [];
  let y = AXIS_HEIGHT;
  let currentGroup: string | null = null;
  for (const { group, lane } of storeLanes) {
    if (group !== currentGroup) {
      groups.push({ label: group, y });
      y += GROUP_HEIGHT;
      currentGroup = group;
    }
    lanes.push({ ...lane, y });
    y += LANE_HEIGHT;
  }
  if (clients.size > 0) {
    groups.push({ label: 'Client sends (the caller, with its retries)', y });
    y += GROUP_HEIGHT;
    for (const [id, { service, node }] of [...clients].sort(([a], [b]) => a.localeCompare(b))) {
      lanes.push({
        kind: 'client',
        id,
        label: `${service} client`,
        detail: `node ${node}`,
        nodes: [node],
        service,
        y,
      });
      y += LANE_HEIGHT;
    }
  }

  const { startMillis, endMillis } = window ?? timelineExtent(attempts, events);
  // Pixels, not time, at both ends: a glyph drawn at the window's first or last moment is whole.
  const left = plotLeft + EDGE_PADDING;
  const scaleWidth = plotRight - EDGE_PADDING - left;
  const windowMillis = Math.max(endMillis - startMillis, 1);
  const x = (time: string | number) => {
    const millis = typeof time === 'number' ? time : Date.parse(time);
    return left + ((millis - startMillis) / windowMillis) * scaleWidth;
  };
  const timeAt = (pixel: number) => startMillis + ((pixel - left) / scaleWidth) * windowMillis;
  const maxTicks = Math.max(2, Math.floor((plotRight - plotLeft) / 96));
  const step =
    TICK_STEPS_MILLIS.find((candidate) => windowMillis / candidate <= maxTicks) ??
    TICK_STEPS_MILLIS[TICK_STEPS_MILLIS.length - 1]!;
  const ticks: TimelineLayout['ticks'] = [];
  for (let millis = Math.ceil(startMillis / step) * step; millis <= endMillis; millis += step) {
    ticks.push({ millis, x: x(millis), label: formatTick(millis, step) });
  }

  return {
    width,
    height: y + BOTTOM,
    labelWidth,
    plotLeft,
    plotRight,
    axisY,
    lanesTop: AXIS_HEIGHT,
    lanesBottom: y,
    lanes,
    groups,
    startMillis,
    endMillis,
    x,
    timeAt,
    ticks,
  };
}

/**
 * Everything the attempts and routing events cover, with a little room either side, and at least
 * a second: the window the timeline shows unzoomed.
 */
export function timelineExtent(
  attempts: readonly KeyedAttempt[],
  events: readonly RoutingEventJson[],
): TimeWindow {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const { attempt } of attempts) {
    first = Math.min(first, Date.parse(attempt.start));
    last = Math.max(last, Date.parse(attempt.end));
  }
  for (const event of events) {
    first = Math.min(first, Date.parse(event.start));
    last = Math.max(last, Date.parse(event.end));
  }
  if (!Number.isFinite(first)) {
    last = Date.now();
    first = last - 60_000;
  }
  // Centred, so a key whose attempts took a few milliseconds is not squeezed against one edge.
  const span = Math.max(last - first, 1_000) * 1.04;
  const startMillis = (first + last) / 2 - span / 2;
  return { startMillis, endMillis: startMillis + span };
}

function groupLabel(region: string, cluster: string): string {
  return `region ${region || '(unknown)'} › cluster ${cluster || '(unknown)'}`;
}

/** Shortens long span values for a fixed-width label, keeping both ends (ids differ at the end). */
export function shorten(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = Math.ceil((maxChars - 1) * 0.45);
  const tail = maxChars - 1 - head;
  return `${text.slice(0, head)}…${text.slice(text.length - tail)}`;
}
