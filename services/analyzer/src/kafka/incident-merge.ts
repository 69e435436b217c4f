import {
  adviceFactsOf,
  describeIncident,
  type Incident,
  mergeIncidentFacts,
  nodesTotalOfIncident,
  storesTotalOfIncident,
} from '@keyscope/detector';

/**
 * One incident from the parts the attempts partitions' detectors report for it. The parts share
 * the incident's identity (id, service, operation, class, routing event or bucket) and each
 * counts only the keys that hash to its partition, so keys add up, stores and nodes unite, the
 * incident opened with its first part, is open while any part is, and is settled (may be paged)
 * once any part is (a part stored before parts said so is settled).
 *
 * Stores and nodes are listed up to `maxListed` each, in name order. Their totals are exact while
 * no part's list was cut; past that a part's list no longer names every store it counted, and the
 * total is the most that can be known from the parts: the larger of the union's size and the
 * largest part's total (partitions of one incident mostly reach the same stores, so their totals
 * do not add up).
 */
export function mergeIncidentParts(parts: readonly Incident[], maxListed: number): Incident {
  if (parts.length === 0) throw new RangeError('an incident needs at least one part');
  if (parts.length === 1) return parts[0]!;
  const stores = union(parts.map((part) => part.stores));
  const nodes = union(parts.map((part) => part.nodes));
  const largest = parts.reduce((a, b) => (b.keys > a.keys ? b : a));
  const latestEvent = parts.reduce((a, b) =>
    (b.routingEvent?.endUnixMillis ?? -1) > (a.routingEvent?.endUnixMillis ?? -1) ? b : a,
  ).routingEvent;
  const open = parts.some((part) => part.status === 'open');
  const keys = parts.reduce((sum, part) => sum + part.keys, 0);
  const merged: Incident = {
    ...largest,
    status: open ? 'open' : 'resolved',
    settled: parts.some((part) => part.settled !== false),
    routingEvent: latestEvent,
    keys,
    stores: stores.slice(0, maxListed),
    nodes: nodes.slice(0, maxListed),
    storesTotal: Math.max(stores.length, extreme(parts, storesTotalOfIncident, Math.max)),
    nodesTotal: Math.max(nodes.length, extreme(parts, nodesTotalOfIncident, Math.max)),
    openedUnixMillis: extreme(parts, (part) => part.openedUnixMillis, Math.min),
    lastFindingUnixMillis: extreme(parts, (part) => part.lastFindingUnixMillis, Math.max),
    resolvedUnixMillis: open ? null : extreme(parts, (part) => part.resolvedUnixMillis ?? 0, Math.max),
    title: retitle(largest, keys),
  };
  // Worded anew from the parts' facts summed: every count in the advice is the whole incident's.
  if (parts.every((part) => part.facts !== undefined)) {
    merged.facts = mergeIncidentFacts(parts.map((part) => part.facts!));
    Object.assign(merged, describeIncident(merged, adviceFactsOf(merged.facts, merged.storesTotal)));
  }
  return merged;
}

/**
 * The detector titles an incident `<service> <operation>: <n> key(s) …` from its own part's key
 * count; the merged incident says the total. Anything else in the title is the same in every part.
 * Parts stored before they carried their facts are retitled so; the others are worded anew.
 */
function retitle(part: Incident, keys: number): string {
  const prefix = `${part.service} ${part.operation}: ${keysText(part.keys)}`;
  if (!part.title.startsWith(prefix)) return part.title;
  return `${part.service} ${part.operation}: ${keysText(keys)}${part.title.slice(prefix.length)}`;
}

/** `pick(a, b)` folded over the parts' values, without spreading them into one call's arguments. */
function extreme(
  parts: readonly Incident[],
  value: (part: Incident) => number,
  pick: typeof Math.max,
): number {
  let result = value(parts[0]!);
  for (let i = 1; i < parts.length; i++) result = pick(result, value(parts[i]!));
  return result;
}

function keysText(keys: number): string {
  return keys === 1 ? '1 key' : `${keys} keys`;
}

function union(lists: readonly (readonly string[])[]): string[] {
  return [...new Set(lists.flat())].sort();
}
