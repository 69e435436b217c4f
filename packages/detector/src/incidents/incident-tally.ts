import { SCOPE_LEVELS, type ScopeLevel } from '@keyscope/attempts';
import { type AdviceFacts, emptyRetryAfter, type FindingFacts, SPREAD_ORDER } from '../rules/advice.ts';
import { type Finding, repeatUnixMillisOf } from '../rules/finding.ts';
import { adviceFactsOf, busiestNodes, type IncidentFacts, namedPairsOf, pairsOf } from './incident-facts.ts';

/**
 * Running totals over an incident's findings: what its summary (stores, nodes, times) and its
 * advice (`AdviceFacts`) are made of, kept as counts that a finding adds to when it is placed and
 * takes back when it leaves or is replaced. A summary costs the size of its store and node lists,
 * not a walk over its findings once per detector call that touched it, which would be quadratic
 * over a failover that doubles thousands of keys.
 *
 * Minimums and maximums cannot be taken back: when a finding that held one leaves or changes,
 * they are recomputed from the members at the next `summary` (removals are rare: regrouping).
 */
export class IncidentTally {
  readonly #stores = new Map<string, number>();
  readonly #nodes = new Map<string, number>();
  readonly #declared = new Map<ScopeLevel, number>();
  readonly #spreads = new Array<number>(SPREAD_ORDER.length).fill(0);
  #proxies = 0;
  #races = 0;
  #ttls = 0;
  #storesUnknown = 0;
  #crossTenantReplays = 0;
  #effectsUnknown = 0;
  #executionsUnseen = 0;
  #opened = Number.POSITIVE_INFINITY;
  #last = Number.NEGATIVE_INFINITY;
  #longestGapMillis = 0;
  #extremesStale = false;
  /** Callers' waits, counted per 100 ms bucket (`bucketOf`). */
  readonly #callerWaits = new Map<number, number>();
  /** First executions' durations per node, per 100 ms bucket. */
  readonly #executionMillis = new Map<string, Map<number, number>>();
  #outlived = 0;
  #clipped = 0;
  #judged = 0;
  #known = 0;
  #lost = 0;
  #firstInEvent = 0;
  #keys = 0;
  /** Keys by how many stores each reached. */
  readonly #storesPerKey = new Map<number, number>();
  readonly #executionStoresPerKey = new Map<number, number>();
  readonly #methods = new Map<string, number>();
  readonly #retryAfter = emptyRetryAfter();

  /**
   * An incident opens when its first key ran again (or crossed the key scope), not at that key's
   * first attempt, which may precede the routing event that broke its retry path.
   */
  add(finding: Finding, facts: FindingFacts): void {
    this.#count(facts, 1);
    if (repeatUnixMillisOf(finding) < this.#opened) this.#opened = repeatUnixMillisOf(finding);
    if (finding.lastSeenUnixMillis > this.#last) this.#last = finding.lastSeenUnixMillis;
    if (facts.gapMillis > this.#longestGapMillis) this.#longestGapMillis = facts.gapMillis;
  }

  remove(finding: Finding, facts: FindingFacts): void {
    this.#count(facts, -1);
    if (
      repeatUnixMillisOf(finding) === this.#opened ||
      finding.lastSeenUnixMillis === this.#last ||
      facts.gapMillis === this.#longestGapMillis
    ) {
      this.#extremesStale = true;
    }
  }

  /**
   * `before` judged again as `after` (the same finding, in the same incident). An extreme `before`
   * held goes stale only when `after` moves it back: a key judged again on a later attempt mostly
   * keeps its repeat and its gap and moves its last attempt on, which leaves every extreme known.
   */
  replace(before: Finding, beforeFacts: FindingFacts, after: Finding, afterFacts: FindingFacts): void {
    this.#count(beforeFacts, -1);
    this.#count(afterFacts, 1);
    if (
      (repeatUnixMillisOf(before) === this.#opened && repeatUnixMillisOf(after) > this.#opened) ||
      (before.lastSeenUnixMillis === this.#last && after.lastSeenUnixMillis < this.#last) ||
      (beforeFacts.gapMillis === this.#longestGapMillis && afterFacts.gapMillis < this.#longestGapMillis)
    ) {
      this.#extremesStale = true;
    }
    if (repeatUnixMillisOf(after) < this.#opened) this.#opened = repeatUnixMillisOf(after);
    if (after.lastSeenUnixMillis > this.#last) this.#last = after.lastSeenUnixMillis;
    if (afterFacts.gapMillis > this.#longestGapMillis) this.#longestGapMillis = afterFacts.gapMillis;
  }

  /**
   * The totals; `members` (the incident's findings and their facts) when an extreme must be
   * recomputed. The store and node lists hold the first `maxListed` names in name order; their
   * totals count every one.
   */
  summary(members: () => Iterable<[Finding, FindingFacts]>, maxListed: number): IncidentSummary {
    if (this.#extremesStale) {
      this.#opened = Number.POSITIVE_INFINITY;
      this.#last = Number.NEGATIVE_INFINITY;
      this.#longestGapMillis = 0;
      for (const [finding, facts] of members()) {
        if (repeatUnixMillisOf(finding) < this.#opened) this.#opened = repeatUnixMillisOf(finding);
        if (finding.lastSeenUnixMillis > this.#last) this.#last = finding.lastSeenUnixMillis;
        if (facts.gapMillis > this.#longestGapMillis) this.#longestGapMillis = facts.gapMillis;
      }
      this.#extremesStale = false;
    }
    return {
      stores: firstInOrder(this.#stores.keys(), maxListed),
      nodes: firstInOrder(this.#nodes.keys(), maxListed),
      storesTotal: this.#stores.size,
      nodesTotal: this.#nodes.size,
      openedUnixMillis: this.#opened,
      lastFindingUnixMillis: this.#last,
      incidentFacts: this.#incidentFacts(),
      get facts(): AdviceFacts {
        return adviceFactsOf(this.incidentFacts, this.storesTotal);
      },
    };
  }

  /** The facts as plain data that adds up over an incident's parts (incident-facts.ts). */
  #incidentFacts(): IncidentFacts {
    const declared: Partial<Record<ScopeLevel, number>> = {};
    for (const scope of SCOPE_LEVELS) {
      const count = this.#declared.get(scope) ?? 0;
      if (count > 0) declared[scope] = count;
    }
    return {
      keys: this.#keys,
      methods: namedPairsOf(this.#methods),
      storesPerKey: pairsOf(this.#storesPerKey),
      executionStoresPerKey: pairsOf(this.#executionStoresPerKey),
      declared,
      spreads: [...this.#spreads],
      proxies: this.#proxies,
      races: this.#races,
      ttls: this.#ttls,
      storesUnknown: this.#storesUnknown,
      crossTenantReplays: this.#crossTenantReplays,
      effectsUnknown: this.#effectsUnknown,
      executionsUnseen: this.#executionsUnseen,
      longestGapMillis: this.#longestGapMillis,
      firstInEvent: this.#firstInEvent,
      retryAfter: { ...this.#retryAfter },
      callerWaits: pairsOf(this.#callerWaits),
      executions: busiestNodes(this.#executionMillis),
      known: this.#known,
      lost: this.#lost,
      clipped: this.#clipped,
      outlived: this.#outlived,
      judged: this.#judged,
    };
  }

  #count(facts: FindingFacts, sign: 1 | -1): void {
    this.#keys += sign;
    adjust(this.#storesPerKey, facts.stores.length, sign);
    adjust(this.#executionStoresPerKey, facts.executionStores, sign);
    adjust(this.#methods, facts.method, sign);
    this.#retryAfter[facts.retryAfter] += sign;
    if (facts.executionLost) this.#lost += sign;
    if (facts.firstInEvent) this.#firstInEvent += sign;
    for (const store of facts.stores) adjust(this.#stores, store, sign);
    for (const node of facts.nodes) adjust(this.#nodes, node, sign);
    for (const scope of SCOPE_LEVELS) {
      const count = facts.declared[scope];
      if (count !== undefined) adjust(this.#declared, scope, sign * count);
    }
    this.#spreads[SPREAD_ORDER.indexOf(facts.spread)]! += sign;
    if (facts.proxy) this.#proxies += sign;
    if (facts.cause === 'race') this.#races += sign;
    if (facts.cause === 'ttl_expired') this.#ttls += sign;
    if (facts.cause === 'store_unknown') this.#storesUnknown += sign;
    if (facts.cause === 'cross_tenant_replay') this.#crossTenantReplays += sign;
    if (facts.cause === 'effect_unknown') this.#effectsUnknown += sign;
    if (facts.cause === 'execution_unseen') this.#executionsUnseen += sign;
    if (facts.callerWaitMillis !== null) adjust(this.#callerWaits, bucketOf(facts.callerWaitMillis), sign);
    if (facts.executionMillis !== null) {
      let buckets = this.#executionMillis.get(facts.executionNode);
      if (buckets === undefined) {
        buckets = new Map();
        this.#executionMillis.set(facts.executionNode, buckets);
      }
      adjust(buckets, bucketOf(facts.executionMillis), sign);
      if (buckets.size === 0) this.#executionMillis.delete(facts.executionNode);
      this.#known += sign;
      if (facts.clipped) this.#clipped += sign;
    }
    if (facts.outlived !== null) {
      this.#judged += sign;
      if (facts.outlived) this.#outlived += sign;
    }
  }
}

export interface IncidentSummary {
  stores: string[];
  nodes: string[];
  storesTotal: number;
  nodesTotal: number;
  openedUnixMillis: number;
  lastFindingUnixMillis: number;
  incidentFacts: IncidentFacts;
  /** The advice's facts, from `incidentFacts` and `storesTotal`. */
  readonly facts: AdviceFacts;
}

/** Durations are summarized to the nearest 100 ms (a 2000.4 ms timeout reads 2.0 s). */
export const TIMING_BUCKET_MILLIS = 100;

function bucketOf(millis: number): number {
  return Math.round(millis / TIMING_BUCKET_MILLIS) * TIMING_BUCKET_MILLIS;
}

/** The first `limit` of `names` in code-unit order. */
function firstInOrder(names: Iterable<string>, limit: number): string[] {
  const sorted = [...names].sort();
  if (sorted.length > limit) sorted.length = limit;
  return sorted;
}

function adjust<K>(counts: Map<K, number>, key: K, by: number): void {
  const count = (counts.get(key) ?? 0) + by;
  if (count === 0) counts.delete(key);
  else counts.set(key, count);
}
