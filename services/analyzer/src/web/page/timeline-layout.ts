import type { AttemptJson, RoutingEventJson, ServerAttemptJson } from './api-types.ts';

/**
 * Where things go on the timeline, computed without the DOM: the lanes (one per dedup store,
 * grouped by region and cluster, then one per client node), the time scale and its ticks.
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
  startMillis: number;
  endMillis: number;
  x: (iso: string | number) => number;
  ticks: { millis: number; x: number; label: string }[];
}

export const LANE_HEIGHT = 40;
const GROUP_HEIGHT = 26;
const AXIS_HEIGHT = 64;
const BOTTOM = 12;
const TICK_STEPS_MILLIS = [
  100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000,
  1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000,
];

export function layoutTimeline(
  attempts: readonly KeyedAttempt[],
  events: readonly RoutingEventJson[],
  width: number,
  formatTick: (millis: number, stepMillis: number) => string,
): TimelineLayout {
  const labelWidth = width < 720 ? 170 : width < 1200 ? 270 : 330;
  const plotLeft = labelWidth + 16;
  const plotRight = width - 24;
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

  let startMillis = Number.POSITIVE_INFINITY;
  let endMillis = Number.NEGATIVE_INFINITY;
  for (const { attempt } of attempts) {
    startMillis = Math.min(startMillis, Date.parse(attempt.start));
    endMillis = Math.max(endMillis, Date.parse(attempt.end));
  }
  for (const event of events) {
    startMillis = Math.min(startMillis, Date.parse(event.start));
    endMillis = Math.max(endMillis, Date.parse(event.end));
  }
  if (!Number.isFinite(startMillis)) {
    startMillis = Date.now() - 60_000;
    endMillis = Date.now();
  }
  const span = Math.max(endMillis - startMillis, 1_000);
  startMillis -= span * 0.03;
  endMillis = startMillis + span * 1.06;

  const plotWidth = plotRight - plotLeft;
  const x = (time: string | number) => {
    const millis = typeof time === 'number' ? time : Date.parse(time);
    return plotLeft + ((millis - startMillis) / (endMillis - startMillis)) * plotWidth;
  };
  const maxTicks = Math.max(2, Math.floor(plotWidth / 96));
  const step =
    TICK_STEPS_MILLIS.find((candidate) => (endMillis - startMillis) / candidate <= maxTicks) ??
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
    ticks,
  };
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
