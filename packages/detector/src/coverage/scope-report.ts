import type { Attempt, ScopeLevel, ServerAttempt } from '@keyscope/attempts';
import type { MappedScope } from '../config.ts';
import { tierName } from '../tier-name.ts';

export type { MappedScope } from '../config.ts';

import { DistinctCount } from './distinct-count.ts';
import { replayHeaderOf, type TierReplayHeader } from './replay-header.ts';

/** How far one key's requests spread at a tier: the smallest placement level holding them all. */
export type SpreadLevel = 'node' | 'cluster' | 'region' | 'global';
const SPREAD_ORDER: readonly SpreadLevel[] = ['node', 'cluster', 'region', 'global'];

/** The reconciliation view of docs/design.md: declared key scope vs observed retry scope, per tier. */
export interface ScopeReportRow {
  service: string;
  operation: string;
  /** The scope most server attempts declared (`idempotency.scope`); 'unknown' if none did. */
  declaredScope: ScopeLevel | 'unknown';
  /**
   * Where the declared scope comes from: `mapping` when the attribute mapping declares the tier's
   * scope (its spans carry none; a span that names its own scope still wins for its attempts),
   * `span` when the spans declare it, `unknown` when nothing does.
   */
  scopeFrom: 'span' | 'mapping' | 'unknown';
  /** Declarations seen, by level, for the rare tier whose instances disagree. */
  declaredCounts: Partial<Record<ScopeLevel, number>>;
  keys: number;
  /** Keys whose requests landed on ≥2 nodes of one cluster / ≥2 clusters of one region / ≥2 regions. */
  keysSpanning: { nodes: number; clusters: number; regions: number };
  /** The smallest level that would have held every observed retry of every key. */
  smallestCoveringScope: SpreadLevel;
  /** Keys whose retries reached beyond the declared scope. */
  keysAtRisk: number;
  status: 'sound' | 'narrower' | 'unknown';
  /** How complete keyscope's view of the tier is (see `TierCoverage`). */
  coverage: TierCoverage;
  /**
   * Whether the tier's replay header reaches keyscope, for a tier whose outcomes are read from HTTP
   * responses (replay-header.ts); null when none of its outcomes is.
   */
  replayHeader: TierReplayHeader | null;
  /**
   * false for a scope the mapping declares (`scopes`) for a service that has sent no keyed span:
   * a service name that does not match its spans' `service.name`, or a service not yet traced.
   * Such a row has no keys and status `unknown`, and comes after the tiers seen.
   */
  spansSeen: boolean;
}

/**
 * What keyscope sees of a tier's keyed requests, counted from the spans it received by the bounded
 * join of `evidence-coverage.ts`: sampling and lost spans show as figures below 1. A ratio is null
 * while its tier has nothing to count.
 *
 * - `arrivals`: keyed SERVER spans without an outcome at the tier; `arrivalsWithDecision` of them
 *   have a server attempt (the dedup decision) in the same trace that is their child.
 * - `requests`: the tier's keyed requests (arrivals, and server attempts that are not the decision
 *   of an arrival) that name a parent span; `requestsWithSend` of them have a keyed CLIENT send of
 *   the same trace as that parent. A request whose caller is not traced names no parent and is not
 *   counted.
 * - `sends`: keyed CLIENT sends that reached the tier: answered by a request at it, or unanswered
 *   (no server-side span under them) from a client service whose answered sends to the same target
 *   landed at the tier; `sendsWithServerSpan` of them were answered.
 * - `keysOneIn`: the counts are of one key in this many, chosen by a hash of the key
 *   (`detector.coverageKeysOneIn`): a sample of whole keys, so the ratios estimate the tier's and
 *   the counts are about that share of its traffic.
 * - `keys`: keys with a request at the tier, each counted once it was seen whole within the allowed
 *   lateness (a key whose attempts come again later counts again); `keysFullyVisible` of them had
 *   every arrival with its decision, every counted request with its send, every counted send with
 *   its server span, and no gap in the resend counts of their sends.
 */
export interface TierCoverage {
  keysOneIn: number;
  arrivals: number;
  arrivalsWithDecision: number;
  requests: number;
  requestsWithSend: number;
  keys: number;
  keysFullyVisible: number;
  sends: number;
  sendsWithServerSpan: number;
  arrivalsWithDecisionRatio: number | null;
  requestsWithSendRatio: number | null;
  keysFullyVisibleRatio: number | null;
  sendsWithServerSpanRatio: number | null;
}

/**
 * The counts of `TierCoverage` in one array, in this order: what the scope report's state persists
 * and what `EvidenceCoverage` adds to.
 */
export const COVERAGE_COUNTS = [
  'arrivals',
  'arrivalsWithDecision',
  'requests',
  'requestsWithSend',
  'keys',
  'keysFullyVisible',
  'sends',
  'sendsWithServerSpan',
] as const;

/**
 * After the `COVERAGE_COUNTS`, the same array holds the replay header's counts (replay-header.ts),
 * so that they persist and add up over Kafka partitions alike: inferred replays, of every key,
 * counted as attempts are kept; inferred repeats, counted by `EvidenceCoverage` over its sample.
 */
export const INFERRED_REPLAYS = COVERAGE_COUNTS.length;
export const INFERRED_REPEATS = COVERAGE_COUNTS.length + 1;
const TIER_COUNTS = COVERAGE_COUNTS.length + 2;

function ratio(part: number, whole: number): number | null {
  return whole === 0 ? null : part / whole;
}

/** The level at which a set of landings first differ (node when they share one node). */
export function spreadOf(landed: readonly Attempt[]): SpreadLevel {
  let level = 0;
  const first = landed[0];
  if (first === undefined) return 'node';
  for (const attempt of landed) {
    const p = attempt.placement;
    const q = first.placement;
    if (p.region !== q.region) return 'global';
    if (p.cluster !== q.cluster) level = Math.max(level, 2);
    else if (p.node !== q.node) level = Math.max(level, 1);
  }
  return SPREAD_ORDER[level]!;
}

/** Whether a key scope holds a spread; `tenant` and `global` namespaces span every placement. */
export function covers(scope: ScopeLevel, spread: SpreadLevel): boolean {
  if (scope === 'tenant' || scope === 'global') return true;
  return SPREAD_ORDER.indexOf(scope) >= SPREAD_ORDER.indexOf(spread);
}

export type ScopeReportState = ScopeTierState[];

/**
 * One tier's aggregates as plain data, what the store persists row by row. The overflow bucket
 * (`tier` is `OVERFLOW_TIER`) also carries `distinct`, its `DistinctCount` of the tiers it holds.
 */
export interface ScopeTierState {
  tier: string;
  service: string;
  operation: string;
  declared: Partial<Record<ScopeLevel, number>>;
  keys: number;
  spread: number[];
  /**
   * The `COVERAGE_COUNTS`, then the replay header's (`INFERRED_REPLAYS`, `INFERRED_REPEATS`);
   * absent in state persisted before coverage was counted, shorter before replays were.
   */
  coverage?: number[];
  distinct?: string;
  /**
   * For a tier of dedup decisions recorded on child spans of requests (`idempotency.check`), the
   * tiers of those requests' SERVER spans (`tierName`, at most `MAX_ENDPOINTS`, in name order):
   * with exactly one, the report shows the two as one row named after the request's endpoint.
   * Absent when none was seen.
   */
  endpoints?: string[];
}

/** Endpoints a decision tier records; a tier under more is named after its own span all the same. */
const MAX_ENDPOINTS = 4;

/**
 * The tier name of the overflow bucket: '' is no tier's (a tier name holds a NUL between its
 * service and operation, `tierName`).
 */
export const OVERFLOW_TIER = '';

/**
 * The tiers past `detector.maxTiers`, summed in one bucket: their keys, spread and coverage, and
 * about how many they are. Their attempts are judged for duplicates like any other.
 */
export interface ScopeReportOverflow {
  /** Distinct tiers summed here, estimated (`DistinctCount`: exact in practice below a few hundred). */
  tiers: number;
  keys: number;
  keysSpanning: { nodes: number; clusters: number; regions: number };
  smallestCoveringScope: SpreadLevel;
  coverage: TierCoverage;
}

/** One page of the report, in order of service then operation; `after` is the last row's `tierName`. */
export interface ScopeReportPage {
  rows: ScopeReportRow[];
  /** The `tierName` to pass as `after` for the next page; null on the last page. */
  next: string | null;
}

/**
 * A tier's live aggregates. `coverage` is the live `COVERAGE_COUNTS` array the evidence coverage
 * adds to; whoever changes any of it calls `ScopeReport.touched` while `changed` is false.
 */
export interface TierStats {
  readonly tier: string;
  readonly service: string;
  readonly operation: string;
  readonly declared: Map<ScopeLevel, number>;
  keys: number;
  readonly spread: number[];
  readonly coverage: number[];
  /** `ScopeTierState.endpoints`: the tiers of the requests this tier's decisions were made in. */
  readonly endpoints: Set<string>;
  /** Changed since the last `takeChanges`. */
  changed: boolean;
}

/**
 * Aggregates kept incrementally: a key counts once per tier, at the spread it has reached so far
 * (moving up a level moves it between counters), so the report needs no scan of key state.
 *
 * At most `maxTiers` tiers are kept one by one; the aggregates of a tier first seen past it go to
 * one overflow bucket (the Tempo service graph's way with edges: cap, count what goes over, show
 * it), so a service that names its spans by URL costs a bounded report. What changed since the
 * last `takeChanges` is listed as it changes, for the store to write only those tiers.
 */
export class ScopeReport {
  private readonly tiers = new Map<string, TierStats>();
  /**
   * The same rows by service, then operation: `tierAt` finds an attempt's row from strings the
   * decoder made (their hashes kept with them), without building and hashing its name.
   */
  private readonly byService = new Map<string, Map<string, TierStats>>();
  private readonly overflowStats: TierStats;
  private readonly overflowTiers = new DistinctCount();
  private overflowed = 0;
  /** Tier names in order, for paging; null when a tier was added since it was sorted. */
  private sorted: string[] | null = [];
  /**
   * Endpoint tier → the decision tiers shown in its row (`decisionUnder`); null when a tier or an
   * endpoint was added since it was built.
   */
  private merged: Map<string, TierStats[]> | null = null;
  private changedList: TierStats[] = [];
  /** `service\0operation` and `service\0` of the scopes the mapping declares. */
  private readonly mapped: ReadonlySet<string>;
  /** Tiers whose first replay was counted since the last `takeFirstReplays`. */
  private firstReplays: string[] = [];

  constructor(
    private readonly declaredScopes: readonly MappedScope[] = [],
    private readonly coverageKeysOneIn = 1,
    private readonly maxTiers = Number.POSITIVE_INFINITY,
    private readonly replayHeaderMinRepeats = 1,
  ) {
    this.mapped = new Set(declaredScopes.map((entry) => `${entry.service}\u0000${entry.operation ?? ''}`));
    this.overflowStats = newStats(OVERFLOW_TIER, '', '');
  }

  /** Attempts whose tier was past `maxTiers`, counted into the overflow bucket (since this process started). */
  get overflowAttempts(): number {
    return this.overflowed;
  }

  /** Tiers kept one by one. */
  get size(): number {
    return this.tiers.size;
  }

  /**
   * The tier's aggregates, created while fewer than `maxTiers` are kept; past it, the overflow
   * bucket's (the tier is added to its distinct count). `attempt`: an attempt is being counted,
   * which the overflow counts.
   */
  tierOf(tier: string, service: string, operation: string, attempt = false): TierStats {
    const stats = this.tiers.get(tier);
    if (stats !== undefined) return stats;
    if (this.tiers.size >= this.maxTiers) {
      this.overflowTiers.add(tier);
      if (attempt) this.overflowed++;
      return this.overflowStats;
    }
    const created = newStats(tier, service, operation);
    this.add(created);
    this.sorted = null;
    this.merged = null;
    return created;
  }

  /** `tierOf` the tier of `service` and `operation`, found without building its name when it is kept. */
  tierAt(service: string, operation: string, attempt = false): TierStats {
    const kept = this.byService.get(service)?.get(operation);
    if (kept !== undefined) return kept;
    const stats = this.tierOf(tierName(service, operation), service, operation, attempt);
    if (stats !== this.overflowStats) this.indexUnder(service, operation, stats);
    return stats;
  }

  /** Whether `stats` is the overflow bucket's. */
  isOverflow(stats: TierStats): boolean {
    return stats === this.overflowStats;
  }

  /** Lists the tier as changed since the last `takeChanges`. */
  touched(stats: TierStats): void {
    if (stats.changed) return;
    stats.changed = true;
    this.changedList.push(stats);
  }

  declared(stats: TierStats, scope: ScopeLevel | ''): void {
    if (scope === '') return;
    stats.declared.set(scope, (stats.declared.get(scope) ?? 0) + 1);
    this.touched(stats);
  }

  /** A server attempt kept at the tier: its declared scope, and a replay read from HTTP. */
  decided(stats: TierStats, attempt: ServerAttempt): void {
    this.declared(stats, attempt.scope);
    if (attempt.outcomeFrom !== 'http' || attempt.outcome !== 'hit') return;
    const replays = stats.coverage[INFERRED_REPLAYS]!;
    if (replays === 0 && stats !== this.overflowStats) this.firstReplays.push(stats.tier);
    stats.coverage[INFERRED_REPLAYS] = replays + 1;
    this.touched(stats);
  }

  /**
   * Whether the tier has shown a replay read from HTTP (replay-header.ts); a tier past `maxTiers`
   * reads the overflow bucket's.
   */
  showsReplays(tier: string): boolean {
    const stats = this.tiers.get(tier) ?? (this.tiers.size >= this.maxTiers ? this.overflowStats : undefined);
    return stats !== undefined && stats.coverage[INFERRED_REPLAYS]! > 0;
  }

  /** The tiers that showed their first replay since the last call (their doubted findings are judged again). */
  takeFirstReplays(): string[] {
    const tiers = this.firstReplays;
    this.firstReplays = [];
    return tiers;
  }

  /** A key's first landing at a tier. */
  keySeen(stats: TierStats): void {
    stats.keys++;
    stats.spread[0] = stats.spread[0]! + 1;
    this.touched(stats);
  }

  /**
   * A decision of tier `decisions` was seen on a child span of a request of tier `endpoint` (its
   * SERVER span, carrying the key): the report shows them as one row, the endpoint's, while that
   * is the only endpoint its decisions were seen under.
   */
  decisionUnder(decisions: TierStats, endpoint: TierStats): void {
    if (decisions === endpoint || decisions.service !== endpoint.service) return;
    if (decisions === this.overflowStats || endpoint === this.overflowStats) return;
    if (decisions.endpoints.has(endpoint.tier) || decisions.endpoints.size >= MAX_ENDPOINTS) return;
    decisions.endpoints.add(endpoint.tier);
    this.merged = null;
    this.touched(decisions);
  }

  /** A suspect key's spread at a tier changed from `from` to `to`. */
  spreadChanged(tier: string, from: SpreadLevel, to: SpreadLevel): void {
    if (from === to) return;
    const stats = this.tiers.get(tier) ?? (this.tiers.size >= this.maxTiers ? this.overflowStats : undefined);
    if (stats === undefined) return;
    const spread = stats.spread;
    spread[SPREAD_ORDER.indexOf(from)] = spread[SPREAD_ORDER.indexOf(from)]! - 1;
    spread[SPREAD_ORDER.indexOf(to)] = spread[SPREAD_ORDER.indexOf(to)]! + 1;
    this.touched(stats);
  }

  /** The aggregates as plain data, every tier and the overflow bucket when it holds any. */
  exportState(): ScopeReportState {
    const state = [...this.tiers.values()].map((stats) => this.stateOf(stats));
    if (!this.overflowTiers.empty) state.push(this.stateOf(this.overflowStats));
    return state;
  }

  /**
   * The tiers changed since the last call, as plain data, and forgets that they changed: what a
   * commit persists (the store upserts them by `tier`).
   */
  takeChanges(): ScopeReportState {
    const changes = this.changedList.map((stats) => {
      stats.changed = false;
      return this.stateOf(stats);
    });
    this.changedList = [];
    return changes;
  }

  /**
   * Replaces the aggregates with `state` (every row is kept, past `maxTiers` too: a cap lowered
   * since applies to tiers seen from now on). Nothing counts as changed after it.
   */
  importState(state: ScopeReportState): void {
    this.tiers.clear();
    this.byService.clear();
    this.sorted = null;
    this.merged = null;
    this.changedList = [];
    this.firstReplays = [];
    resetStats(this.overflowStats);
    this.overflowTiers.importState('');
    for (const row of state) {
      if (row.tier === OVERFLOW_TIER) {
        loadStats(this.overflowStats, row);
        this.overflowTiers.importState(row.distinct ?? '');
        continue;
      }
      const stats = newStats(row.tier, row.service, row.operation);
      loadStats(stats, row);
      this.add(stats);
    }
  }

  private add(stats: TierStats): void {
    this.tiers.set(stats.tier, stats);
    this.indexUnder(stats.service, stats.operation, stats);
  }

  private indexUnder(service: string, operation: string, stats: TierStats): void {
    let byOperation = this.byService.get(service);
    if (byOperation === undefined) this.byService.set(service, (byOperation = new Map()));
    byOperation.set(operation, stats);
  }

  /** Every tier's row in name order, then a row for each declared scope of a service not seen. */
  rows(): ScopeReportRow[] {
    return this.sortedTiers()
      .map((tier) => this.rowOf(this.tiers.get(tier)!))
      .concat(this.unseenDeclarations());
  }

  /** Up to `limit` rows after the tier named `after` ('' for the first page), in `rows()` order. */
  page(after: string, limit: number): ScopeReportPage {
    const names = this.sortedTiers();
    let low = 0;
    let high = names.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (names[middle]! <= after) low = middle + 1;
      else high = middle;
    }
    const slice = names.slice(low, low + limit);
    const next = low + limit < names.length ? slice[slice.length - 1]! : null;
    const rows = slice.map((tier) => this.rowOf(this.tiers.get(tier)!));
    // The declared scopes of services not seen come after every tier: on the last page.
    return { rows: next === null ? rows.concat(this.unseenDeclarations()) : rows, next };
  }

  /** A row for each declared scope whose service has no tier: nothing of it has arrived. */
  private unseenDeclarations(): ScopeReportRow[] {
    if (this.declaredScopes.length === 0) return [];
    const servicesSeen = new Set<string>();
    for (const stats of this.tiers.values()) servicesSeen.add(stats.service);
    return this.declaredScopes
      .filter((entry) => !servicesSeen.has(entry.service))
      .map((entry) => ({
        service: entry.service,
        operation: entry.operation ?? '',
        declaredScope: entry.scope ?? 'unknown',
        scopeFrom: 'mapping',
        declaredCounts: {},
        keys: 0,
        keysSpanning: { nodes: 0, clusters: 0, regions: 0 },
        smallestCoveringScope: 'node',
        keysAtRisk: 0,
        status: 'unknown',
        coverage: coverageOfCounts([], this.coverageKeysOneIn),
        replayHeader: null,
        spansSeen: false,
      }));
  }

  /** The overflow bucket; null while no tier went past `maxTiers`. */
  overflow(): ScopeReportOverflow | null {
    if (this.overflowTiers.empty) return null;
    const stats = this.overflowStats;
    return {
      tiers: Math.max(this.overflowTiers.estimate(), 1),
      keys: stats.keys,
      keysSpanning: { nodes: stats.spread[1]!, clusters: stats.spread[2]!, regions: stats.spread[3]! },
      smallestCoveringScope: widestSpread(stats.spread),
      coverage: coverageOfCounts(stats.coverage, this.coverageKeysOneIn),
    };
  }

  /** The names of the rows, in order: every tier but the decision tiers shown in their endpoint's row. */
  private sortedTiers(): string[] {
    // Building the merged rows drops the order: which tiers are rows may have changed.
    this.mergedRows();
    if (this.sorted === null)
      this.sorted = [...this.tiers.values()]
        .filter((stats) => this.endpointOf(stats) === undefined)
        .map((stats) => stats.tier)
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return this.sorted;
  }

  private mergedRows(): Map<string, TierStats[]> {
    if (this.merged !== null) return this.merged;
    const merged = new Map<string, TierStats[]>();
    for (const stats of this.tiers.values()) {
      const endpoint = this.endpointOf(stats);
      if (endpoint === undefined) continue;
      const list = merged.get(endpoint.tier);
      if (list === undefined) merged.set(endpoint.tier, [stats]);
      else list.push(stats);
    }
    this.merged = merged;
    this.sorted = null;
    return merged;
  }

  /**
   * The endpoint tier whose row shows `stats`: the one tier its decisions were seen under, when
   * that tier is kept and is no decision tier of another endpoint itself.
   */
  private endpointOf(stats: TierStats): TierStats | undefined {
    if (stats.endpoints.size !== 1) return undefined;
    const [name] = stats.endpoints;
    const endpoint = this.tiers.get(name!);
    return endpoint !== undefined && endpoint !== stats && endpoint.endpoints.size === 0
      ? endpoint
      : undefined;
  }

  private stateOf(stats: TierStats): ScopeTierState {
    const state: ScopeTierState = {
      tier: stats.tier,
      service: stats.service,
      operation: stats.operation,
      declared: Object.fromEntries(stats.declared),
      keys: stats.keys,
      spread: [...stats.spread],
      coverage: [...stats.coverage],
    };
    if (stats.endpoints.size > 0) state.endpoints = [...stats.endpoints].sort();
    if (stats === this.overflowStats) state.distinct = this.overflowTiers.exportState();
    return state;
  }

  /**
   * A row's figures: the tier's own, or with the decision tiers shown in it — their declarations
   * and coverage counts added (each counts what the other does not: arrivals at the endpoint,
   * decisions at theirs), keys and spread those of the tier that counted the most keys (both
   * count the same keys, one at the SERVER span and one at its decision).
   */
  private figuresOfRow(stats: TierStats): Pick<TierStats, 'declared' | 'keys' | 'spread' | 'coverage'> {
    const members = this.mergedRows().get(stats.tier);
    if (members === undefined) return stats;
    const declared = new Map(stats.declared);
    const coverage = [...stats.coverage];
    let most = stats;
    for (const member of members) {
      for (const [scope, count] of member.declared) declared.set(scope, (declared.get(scope) ?? 0) + count);
      for (let i = 0; i < coverage.length; i++) coverage[i] = coverage[i]! + member.coverage[i]!;
      if (member.keys > most.keys) most = member;
    }
    return { declared, keys: most.keys, spread: most.spread, coverage };
  }

  private rowOf(tier: TierStats): ScopeReportRow {
    const stats = this.figuresOfRow(tier);
    let declaredScope: ScopeLevel | 'unknown' = 'unknown';
    let most = 0;
    for (const [scope, count] of stats.declared) {
      if (count > most) {
        most = count;
        declaredScope = scope;
      }
    }
    let keysAtRisk = 0;
    if (declaredScope !== 'unknown') {
      for (let level = 0; level < 4; level++) {
        if (!covers(declaredScope, SPREAD_ORDER[level]!)) keysAtRisk += stats.spread[level]!;
      }
    }
    return {
      service: tier.service,
      operation: tier.operation,
      declaredScope,
      scopeFrom:
        declaredScope === 'unknown'
          ? 'unknown'
          : this.mapped.has(`${tier.service}\u0000${tier.operation}`) ||
              this.mapped.has(`${tier.service}\u0000`)
            ? 'mapping'
            : 'span',
      declaredCounts: Object.fromEntries(stats.declared),
      keys: stats.keys,
      keysSpanning: { nodes: stats.spread[1]!, clusters: stats.spread[2]!, regions: stats.spread[3]! },
      smallestCoveringScope: widestSpread(stats.spread),
      keysAtRisk,
      status: declaredScope === 'unknown' ? 'unknown' : keysAtRisk > 0 ? 'narrower' : 'sound',
      coverage: coverageOfCounts(stats.coverage, this.coverageKeysOneIn),
      replayHeader: replayHeaderOf(
        stats.coverage[INFERRED_REPLAYS]!,
        stats.coverage[INFERRED_REPEATS]!,
        this.replayHeaderMinRepeats,
      ),
      spansSeen: true,
    };
  }
}

function newStats(tier: string, service: string, operation: string): TierStats {
  return {
    tier,
    service,
    operation,
    declared: new Map(),
    keys: 0,
    spread: [0, 0, 0, 0],
    coverage: new Array<number>(TIER_COUNTS).fill(0),
    endpoints: new Set(),
    changed: false,
  };
}

function resetStats(stats: TierStats): void {
  stats.declared.clear();
  stats.keys = 0;
  stats.spread.fill(0);
  stats.coverage.fill(0);
  stats.endpoints.clear();
  stats.changed = false;
}

function loadStats(stats: TierStats, row: ScopeTierState): void {
  stats.declared.clear();
  for (const [scope, count] of Object.entries(row.declared) as [ScopeLevel, number][])
    stats.declared.set(scope, count);
  stats.keys = row.keys;
  for (let level = 0; level < 4; level++) stats.spread[level] = row.spread[level] ?? 0;
  for (let index = 0; index < TIER_COUNTS; index++) stats.coverage[index] = row.coverage?.[index] ?? 0;
  stats.endpoints.clear();
  for (const endpoint of row.endpoints ?? []) stats.endpoints.add(endpoint);
}

/** The smallest level that would have held every observed retry of every key. */
function widestSpread(spread: readonly number[]): SpreadLevel {
  let widest = 0;
  for (let level = 0; level < 4; level++) if (spread[level]! > 0) widest = level;
  return SPREAD_ORDER[widest]!;
}

function coverageOfCounts(counts: readonly number[], keysOneIn: number): TierCoverage {
  const [
    arrivals = 0,
    arrivalsWithDecision = 0,
    requests = 0,
    requestsWithSend = 0,
    keys = 0,
    keysFullyVisible = 0,
    sends = 0,
    sendsWithServerSpan = 0,
  ] = counts;
  return {
    keysOneIn,
    arrivals,
    arrivalsWithDecision,
    requests,
    requestsWithSend,
    keys,
    keysFullyVisible,
    sends,
    sendsWithServerSpan,
    arrivalsWithDecisionRatio: ratio(arrivalsWithDecision, arrivals),
    requestsWithSendRatio: ratio(requestsWithSend, requests),
    keysFullyVisibleRatio: ratio(keysFullyVisible, keys),
    sendsWithServerSpanRatio: ratio(sendsWithServerSpan, sends),
  };
}
