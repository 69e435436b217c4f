import type { Attempt, ScopeLevel } from '@keyscope/attempts';

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
   * false for a scope the mapping declares (`scopes`) for a service that has sent no keyed span:
   * a service name that does not match its spans' `service.name`, or a service not yet traced.
   * Such a row has no keys and status `unknown`, and comes after the tiers seen.
   */
  spansSeen: boolean;
}

/** A scope the mapping declares, as the scope report takes it. */
export interface MappedScope {
  readonly service: string;
  readonly operation?: string;
  readonly scope?: ScopeLevel;
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

export type ScopeReportState = {
  tier: string;
  service: string;
  operation: string;
  declared: Partial<Record<ScopeLevel, number>>;
  keys: number;
  spread: number[];
  /** The `COVERAGE_COUNTS`; absent in state persisted before coverage was counted. */
  coverage?: number[];
}[];

interface TierStats {
  service: string;
  operation: string;
  declared: Map<ScopeLevel, number>;
  keys: number;
  spread: number[];
  coverage: number[];
}

/**
 * Aggregates kept incrementally: a key counts once per tier, at the spread it has reached so far
 * (moving up a level moves it between counters), so the report needs no scan of key state.
 */
export class ScopeReport {
  private readonly tiers = new Map<string, TierStats>();
  /** `service\0operation` and `service\0` of the scopes the mapping declares. */
  private readonly mapped: ReadonlySet<string>;

  constructor(
    private readonly declaredScopes: readonly MappedScope[] = [],
    private readonly coverageKeysOneIn = 1,
  ) {
    this.mapped = new Set(declaredScopes.map((entry) => `${entry.service}\u0000${entry.operation ?? ''}`));
  }

  private stats(tier: string, service: string, operation: string): TierStats {
    let stats = this.tiers.get(tier);
    if (stats === undefined) {
      stats = {
        service,
        operation,
        declared: new Map(),
        keys: 0,
        spread: [0, 0, 0, 0],
        coverage: new Array<number>(COVERAGE_COUNTS.length).fill(0),
      };
      this.tiers.set(tier, stats);
    }
    return stats;
  }

  declared(tier: string, service: string, operation: string, scope: ScopeLevel | ''): void {
    if (scope === '') return;
    const stats = this.stats(tier, service, operation);
    stats.declared.set(scope, (stats.declared.get(scope) ?? 0) + 1);
  }

  /** A key's first landing at a tier. */
  keySeen(tier: string, service: string, operation: string): void {
    const stats = this.stats(tier, service, operation);
    stats.keys++;
    stats.spread[0] = stats.spread[0]! + 1;
  }

  /** A suspect key's spread at a tier changed from `from` to `to`. */
  spreadChanged(tier: string, from: SpreadLevel, to: SpreadLevel): void {
    const stats = this.tiers.get(tier);
    if (stats === undefined || from === to) return;
    const spread = stats.spread;
    spread[SPREAD_ORDER.indexOf(from)] = spread[SPREAD_ORDER.indexOf(from)]! - 1;
    spread[SPREAD_ORDER.indexOf(to)] = spread[SPREAD_ORDER.indexOf(to)]! + 1;
  }

  /**
   * The tier's coverage counts (`COVERAGE_COUNTS`), live: the caller adds to them. The array is
   * replaced by `importState`.
   */
  coverageCounts(tier: string, service: string, operation: string): number[] {
    return this.stats(tier, service, operation).coverage;
  }

  /** The aggregates as plain data, to persist alongside what they count. */
  exportState(): ScopeReportState {
    return [...this.tiers].map(([tier, stats]) => ({
      tier,
      service: stats.service,
      operation: stats.operation,
      declared: Object.fromEntries(stats.declared),
      keys: stats.keys,
      spread: [...stats.spread],
      coverage: [...stats.coverage],
    }));
  }

  importState(state: ScopeReportState): void {
    this.tiers.clear();
    for (const row of state) {
      this.tiers.set(row.tier, {
        service: row.service,
        operation: row.operation,
        declared: new Map(Object.entries(row.declared) as [ScopeLevel, number][]),
        keys: row.keys,
        spread: [...row.spread],
        coverage: COVERAGE_COUNTS.map((_, index) => row.coverage?.[index] ?? 0),
      });
    }
  }

  rows(): ScopeReportRow[] {
    const rows: ScopeReportRow[] = [];
    for (const stats of this.tiers.values()) {
      let declaredScope: ScopeLevel | 'unknown' = 'unknown';
      let most = 0;
      for (const [scope, count] of stats.declared) {
        if (count > most) {
          most = count;
          declaredScope = scope;
        }
      }
      let widest = 0;
      for (let level = 0; level < 4; level++) if (stats.spread[level]! > 0) widest = level;
      const smallestCoveringScope = SPREAD_ORDER[widest]!;
      let keysAtRisk = 0;
      if (declaredScope !== 'unknown') {
        for (let level = 0; level < 4; level++) {
          if (!covers(declaredScope, SPREAD_ORDER[level]!)) keysAtRisk += stats.spread[level]!;
        }
      }
      rows.push({
        service: stats.service,
        operation: stats.operation,
        declaredScope,
        scopeFrom:
          declaredScope === 'unknown'
            ? 'unknown'
            : this.mapped.has(`${stats.service}\u0000${stats.operation}`) ||
                this.mapped.has(`${stats.service}\u0000`)
              ? 'mapping'
              : 'span',
        declaredCounts: Object.fromEntries(stats.declared),
        keys: stats.keys,
        keysSpanning: { nodes: stats.spread[1]!, clusters: stats.spread[2]!, regions: stats.spread[3]! },
        smallestCoveringScope,
        keysAtRisk,
        status: declaredScope === 'unknown' ? 'unknown' : keysAtRisk > 0 ? 'narrower' : 'sound',
        coverage: coverageOfCounts(stats.coverage, this.coverageKeysOneIn),
        spansSeen: true,
      });
    }
    rows.sort((a, b) => (a.service + a.operation < b.service + b.operation ? -1 : 1));
    return [...rows, ...this.unseenDeclarations(new Set(rows.map((row) => row.service)))];
  }

  /** A row for each declared scope whose service has no tier: nothing of it has arrived. */
  private unseenDeclarations(servicesSeen: ReadonlySet<string>): ScopeReportRow[] {
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
        spansSeen: false,
      }));
  }
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
