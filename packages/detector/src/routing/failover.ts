import type { Placement } from '@keyscope/attempts';
import { compareEvents, type RoutingEvent } from './routing-event.ts';
import { failoverEvent } from './routing-event-builders.ts';

/**
 * Replaces node_down events by one cluster_failover or region_failover event when every node of
 * the service in that cluster or region went down in overlapping windows: one failover is one
 * event, so it becomes one incident and one page. `nodes` is every node of the service seen, so
 * that a group counts its nodes whether they went down or not; region groups are composed first,
 * and a cluster group composes what they left.
 */
export function composeFailovers(
  service: string,
  nodes: ReadonlyMap<string, { readonly placement: Placement }>,
  downs: RoutingEvent[],
): RoutingEvent[] {
  let remaining = downs;
  const composed: RoutingEvent[] = [];
  for (const level of ['region', 'cluster'] as const) {
    const groups = new Map<string, { nodes: Set<string>; events: RoutingEvent[] }>();
    for (const node of nodes.values()) {
      const name = node.placement[level];
      if (name === '') continue;
      let group = groups.get(name);
      if (group === undefined) groups.set(name, (group = { nodes: new Set(), events: [] }));
      group.nodes.add(node.placement.node);
    }
    for (const event of remaining) groups.get(event[level])?.events.push(event);
    const absorbed = new Set<RoutingEvent>();
    for (const [name, group] of groups) {
      if (group.nodes.size < 2) continue;
      const together = overlappingCover(group.events, group.nodes);
      if (together === null) continue;
      composed.push(failoverEvent(level, service, name, group.nodes.size, together));
      for (const event of together) absorbed.add(event);
    }
    remaining = remaining.filter((event) => !absorbed.has(event));
  }
  return [...composed, ...remaining];
}

/** One down event per node of the group, all sharing a common instant; null if there is none. */
function overlappingCover(events: RoutingEvent[], nodes: Set<string>): RoutingEvent[] | null {
  const byNode = new Map<string, RoutingEvent[]>();
  for (const event of events) {
    const list = byNode.get(event.node);
    if (list === undefined) byNode.set(event.node, [event]);
    else list.push(event);
  }
  if (byNode.size < nodes.size) return null;
  // Try each event's start as the shared instant; groups are small (nodes of one cluster).
  for (const candidate of events) {
    const at = candidate.startUnixMillis;
    const cover: RoutingEvent[] = [];
    for (const list of byNode.values()) {
      const hit = list.find((e) => e.startUnixMillis <= at && at < e.endUnixMillis);
      if (hit === undefined) break;
      cover.push(hit);
    }
    if (cover.length === byNode.size) return cover.sort(compareEvents);
  }
  return null;
}
