import { SCOPE_LEVELS, type ScopeLevel } from '@keyscope/attempts';
import { type AdviceFacts, emptyRetryAfter, mostDeclared, SPREAD_ORDER } from '../rules/advice.ts';
import { RETRY_AFTER, type RetryAfter } from '../rules/finding.ts';

/**
 * What an incident's advice is made of, as plain data that adds up: counts and histograms over its
 * keys, so that the parts of one incident that several detectors hold (the Kafka detect role's
 * partitions, each with the keys that hash to it) sum to the facts of the whole incident, and its
 * advice says what the whole incident's keys say — not the largest part's.
 */
export interface IncidentFacts {
  keys: number;
  /** Keys by the HTTP method of their requests ('' for none): [method, keys] pairs in name order. */
  methods: [string, number][];
  /** Keys by how many stores each reached: [stores, keys] pairs. */
  storesPerKey: [number, number][];
  /** Keys by how many stores each executed in: [stores, keys] pairs. */
  executionStoresPerKey: [number, number][];
  declared: Partial<Record<ScopeLevel, number>>;
  /** Keys by the widest level their retries reached, in `SPREAD_ORDER`. */
  spreads: number[];
  proxies: number;
  races: number;
  ttls: number;
  storesUnknown: number;
  crossTenantReplays: number;
  effectsUnknown: number;
  executionsUnseen: number;
  longestGapMillis: number;
  /** Keys whose first execution ran where and while the incident's routing event was. */
  firstInEvent: number;
  retryAfter: Record<RetryAfter, number>;
  /** Callers' waits: [100 ms bucket, keys] pairs. */
  callerWaits: [number, number][];
  /**
   * First executions' known durations by node: [node, [100 ms bucket, keys] pairs], the
   * `MAX_EXECUTION_NODES` nodes with the most (the advice speaks of the busiest).
   */
  executions: [string, [number, number][]][];
  known: number;
  lost: number;
  clipped: number;
  outlived: number;
  judged: number;
}

/** Nodes whose first executions an incident's facts keep histograms of. */
export const MAX_EXECUTION_NODES = 8;

/** The advice's facts from an incident's, with the number of distinct stores its keys reached. */
export function adviceFactsOf(facts: IncidentFacts, stores: number): AdviceFacts {
  let widest = 0;
  const spreadCounts: AdviceFacts['spreadCounts'] = {};
  facts.spreads.forEach((count, level) => {
    if (count <= 0) return;
    widest = level;
    spreadCounts[SPREAD_ORDER[level]!] = count;
  });

  const declared: Partial<Record<ScopeLevel, number>> = {};
  for (const scope of SCOPE_LEVELS) {
    const count = facts.declared[scope] ?? 0;
    if (count > 0) declared[scope] = count;
  }
  // The node that ran most first executions; ties to the first in name order, so any order of
  // adds gives one summary.
  let executionNode = '';
  let executions: [number, number][] | undefined;
  let most = 0;
  // most: the first executions counted on executionNode.
  for (const [node, buckets] of facts.executions) {
    let count = 0;
    for (const [, n] of buckets) count += n;
    if (count > most || (count === most && count > 0 && node < executionNode)) {
      [executionNode, executions, most] = [node, buckets, count];
    }
  }
  let method = '';
  let withMethod = 0;
  for (const [name, count] of facts.methods) {
    if (name !== '' && (count > withMethod || (count === withMethod && name < method)))
      [method, withMethod] = [name, count];
  }
  return {
    keys: facts.keys,
    method,
    stores,
    storesPerKey: extremesOf(facts.storesPerKey),
    executionStoresPerKey: extremesOf(facts.executionStoresPerKey),
    declared,
    declaredScope: mostDeclared(declared),
    spread: SPREAD_ORDER[widest]!,
    spreadCounts,
    proxies: facts.proxies,
    race: facts.races > 0,
    ttl: facts.ttls > 0,
    storeUnknown: facts.storesUnknown > 0,
    crossTenantReplay: facts.crossTenantReplays > 0,
    effectUnknown: facts.effectsUnknown > 0,
    executionUnseen: facts.executionsUnseen > 0,
    longestGapMillis: facts.longestGapMillis,
    firstInEvent: facts.firstInEvent,
    retryAfter: { ...emptyRetryAfter(), ...facts.retryAfter },
    timing: {
      callerWaitMillis: quantileOf(facts.callerWaits, 0.5),
      executionNode,
      executionP90Millis: executions === undefined ? null : quantileOf(executions, 0.9),
      executionNodeCount: most,
      known: facts.known,
      lost: facts.lost,
      clipped: facts.clipped,
      outlived: facts.outlived,
      judged: facts.judged,
    },
    event: null,
  };
}

/** The facts of an incident whose keys are those of `parts` together (each key in one part). */
export function mergeIncidentFacts(parts: readonly IncidentFacts[]): IncidentFacts {
  const sum = (pick: (facts: IncidentFacts) => number) => parts.reduce((total, p) => total + pick(p), 0);
  const declared: Partial<Record<ScopeLevel, number>> = {};
  for (const part of parts)
    for (const scope of SCOPE_LEVELS) {
      const count = part.declared[scope];
      if (count !== undefined) declared[scope] = (declared[scope] ?? 0) + count;
    }
  const retryAfter = emptyRetryAfter();
  for (const part of parts)
    for (const reason of RETRY_AFTER) retryAfter[reason] += part.retryAfter[reason] ?? 0;
  const executions = new Map<string, Map<number, number>>();
  for (const part of parts)
    for (const [node, buckets] of part.executions) {
      let merged = executions.get(node);
      if (merged === undefined) executions.set(node, (merged = new Map()));
      addPairs(merged, buckets);
    }
  const methods = new Map<string, number>();
  for (const part of parts)
    for (const [name, count] of part.methods) methods.set(name, (methods.get(name) ?? 0) + count);
  return {
    keys: sum((p) => p.keys),
    methods: namedPairsOf(methods),
    storesPerKey: pairsOf(addAll(parts.map((p) => p.storesPerKey))),
    executionStoresPerKey: pairsOf(addAll(parts.map((p) => p.executionStoresPerKey))),
    declared,
    spreads: SPREAD_ORDER.map((_, level) => sum((p) => p.spreads[level] ?? 0)),
    proxies: sum((p) => p.proxies),
    races: sum((p) => p.races),
    ttls: sum((p) => p.ttls),
    storesUnknown: sum((p) => p.storesUnknown),
    crossTenantReplays: sum((p) => p.crossTenantReplays),
    effectsUnknown: sum((p) => p.effectsUnknown),
    executionsUnseen: sum((p) => p.executionsUnseen),
    longestGapMillis: parts.reduce((longest, p) => Math.max(longest, p.longestGapMillis), 0),
    firstInEvent: sum((p) => p.firstInEvent),
    retryAfter,
    callerWaits: pairsOf(addAll(parts.map((p) => p.callerWaits))),
    executions: busiestNodes(executions),
    known: sum((p) => p.known),
    lost: sum((p) => p.lost),
    clipped: sum((p) => p.clipped),
    outlived: sum((p) => p.outlived),
    judged: sum((p) => p.judged),
  };
}

/** The `MAX_EXECUTION_NODES` nodes with the most first executions, as pairs, in name order. */
export function busiestNodes(
  executions: ReadonlyMap<string, ReadonlyMap<number, number>>,
): [string, [number, number][]][] {
  const counted = [...executions].map(([node, buckets]) => {
    let count = 0;
    for (const n of buckets.values()) count += n;
    return { node, buckets, count };
  });
  counted.sort((a, b) => b.count - a.count || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return counted
    .slice(0, MAX_EXECUTION_NODES)
    .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
    .map(({ node, buckets }) => [node, pairsOf(buckets)]);
}

/** Counted names as [name, count] pairs in name order. */
export function namedPairsOf(counts: ReadonlyMap<string, number>): [string, number][] {
  return [...counts].filter(([, n]) => n > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Counted buckets as [bucket, count] pairs in bucket order. */
export function pairsOf(counts: ReadonlyMap<number, number>): [number, number][] {
  return [...counts].filter(([, n]) => n > 0).sort(([a], [b]) => a - b);
}

/** The `q` quantile (nearest rank) of counted buckets; null when none are counted. */
export function quantileOf(buckets: Iterable<readonly [number, number]>, q: number): number | null {
  const sorted = [...buckets].filter(([, n]) => n > 0).sort(([a], [b]) => a - b);
  let total = 0;
  for (const [, n] of sorted) total += n;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const [bucket, n] of sorted) {
    seen += n;
    if (seen >= rank) return bucket;
  }
  return null;
}

/** The fewest and the most of counted values ([value, count] pairs); 0 and 0 when none is counted. */
function extremesOf(pairs: readonly (readonly [number, number])[]): { min: number; max: number } {
  let min = Number.POSITIVE_INFINITY;
  let max = 0;
  for (const [value, count] of pairs) {
    if (count <= 0) continue;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  return { min: max === 0 && min === Number.POSITIVE_INFINITY ? 0 : min, max };
}

function addPairs(into: Map<number, number>, pairs: readonly (readonly [number, number])[]): void {
  for (const [bucket, n] of pairs) into.set(bucket, (into.get(bucket) ?? 0) + n);
}

function addAll(lists: readonly (readonly (readonly [number, number])[])[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const list of lists) addPairs(counts, list);
  return counts;
}
