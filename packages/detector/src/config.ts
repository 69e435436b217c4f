import type { ScopeLevel } from '@keyscope/attempts';

/** A scope the mapping declares, as the scope report takes it. */
export interface MappedScope {
  readonly service: string;
  readonly operation?: string;
  readonly scope?: ScopeLevel;
}

/** The detector's settings, all in one place with units in their names. */
export interface DetectorConfig {
  /**
   * `tenant` when idempotency keys are unique only within a tenant: attempts are then grouped by
   * (tenant, key) and two tenants sharing a key is not a collision.
   */
  readonly keyNamespace: 'global' | 'tenant';
  /**
   * The key scopes the attribute mapping declares (its `scopes`), for the scope report to say where
   * a tier's scope came from, and which declared service has sent nothing. Absent: none.
   */
  readonly declaredScopes?: readonly MappedScope[];
  /** How long a key's attempts are kept and compared (event time). */
  readonly retryHorizonMillis: number;
  /** Keys held in memory; the least recently touched beyond this go to the KeyStateStore. */
  readonly maxKeys: number;
  /**
   * Attempts kept per key within the retry horizon. A key that reaches it (typically a client
   * sending one constant key, "undefined" or "", on every request) is a hot key: its later
   * attempts are counted (`DetectorStats.cappedAttempts`), not kept, and its findings say their
   * evidence was capped. Bounds what one key costs in memory, in the AttemptLog and to judge.
   */
  readonly maxAttemptsPerKey: number;
  /**
   * Keyed attempts the evidence coverage join holds while they wait out the allowed lateness
   * (`evidence-coverage.ts`); past it, the oldest are counted early
   * (`DetectorStats.coverageEvictedEntries`).
   */
  readonly maxCoverageEntries: number;
  /**
   * Evidence coverage is counted over one key in this many, chosen by a hash of the partition key
   * (`coversKey`): whole keys, the same ones in any order and on any instance. 1 counts every key.
   */
  readonly coverageKeysOneIn: number;
  /**
   * Stores a finding lists, and nodes (each list on its own): a key past it lists the first ones it
   * reached, and `Finding.storesTotal` / `nodesTotal` count them all. A key executed in hundreds of
   * stores is already a broken store id (one per request, one per pod restart); a hundred names show
   * the pattern, while a list of thousands would ride in every copy of the finding (SQLite, Kafka,
   * the API). Judging always counts every store: only the list is cut.
   */
  readonly maxStoresPerFinding: number;
  /**
   * Stores an incident lists, and nodes (each list on its own), in name order; `Incident.storesTotal`
   * / `nodesTotal` count them all. An incident gathers many keys, so it lists more than a finding;
   * a thousand names is what a person reads on a page, and keeps an incident's record (stored, sent
   * to alert sinks and Kafka, served) to tens of kilobytes however many stores its keys reached.
   */
  readonly maxStoresPerIncident: number;
  /**
   * Tiers (service and operation) the scope report keeps one by one. A tier first seen past it has
   * its scope report and coverage summed in one overflow bucket (`DetectorStats.tierOverflowAttempts`,
   * `Detector.scopeOverflow`); its keys are judged for duplicates all the same. Bounds what a
   * service naming its spans by URL costs.
   */
  readonly maxTiers: number;
  /**
   * Repeats of a key in one store on one node, judged from HTTP responses alone and counted over
   * the evidence coverage's sample of keys, past which a tier that has shown no replay reads
   * `missing` in the scope report (replay-header.ts): its replay header most likely does not reach
   * keyscope (set with `res.writeHead`). A tier that captures the header shows a replay on nearly
   * every such repeat, so a few without one already tell; ten keep a handful of repeats whose key
   * had really expired from raising it.
   */
  readonly replayHeaderMinRepeats: number;
  /** Findings without a routing event are grouped into incidents per bucket of this size. */
  readonly incidentBucketMillis: number;
  /** An open incident with no new finding for this long (event time) is resolved. */
  readonly quietPeriodMillis: number;
  /**
   * A routing event is blamed for a duplicate when its window comes within this much of the
   * interval from the key's first attempt to its repeat: one activity bucket, because an event's
   * window is counted in whole buckets and the one where it began may not have crossed its
   * thresholds yet.
   */
  readonly routingSlackMillis: number;
  /**
   * Node activity of second t is final once activity up to t + this has been seen, or the clock
   * given to `tick` has passed it: routing events are inferred only from final seconds, so a node
   * whose spans are this late is not mistaken for a node that went down. Covers an SDK's export
   * interval (5 s by default) and a Collector's batching; activity later than this still counts,
   * and revises the events (see docs/design.md, "Event time").
   */
  readonly allowedLatenessMillis: number;
  /** A node silent this long, while the rest of its service is not, is a `node_down` event. */
  readonly silenceMinMillis: number;
  /**
   * Spans the node should have served during a silence, at its share of its service's traffic
   * just before, for the silence to count: with 20 expected, zero observed is no lull (Poisson
   * P(0) ≈ 2·10⁻⁹), while a quiet night spread over a few nodes is not mistaken for a failure.
   */
  readonly silenceMinExpectedSpans: number;
  /** Error ratio of a node's server spans that counts as a spike, sustained for errorSpikeMinMillis. */
  readonly errorSpikeRatio: number;
  readonly errorSpikeMinMillis: number;
  /** Fewest spans per bucket for a bucket's error ratio to count. */
  readonly errorSpikeMinSpans: number;
  /**
   * A node whose server spans lasted past the bound its service's other nodes rarely reach this
   * many times as often as theirs did over the same seconds (and twice as often as its own did over
   * the 30 s before), sustained for latencySpikeMinMillis, is a `latency_spike` (a brownout: the
   * node slowed past its callers' timeouts, and they retried elsewhere). A service slow everywhere
   * is none. How the bound and the shares are read: slow-share.ts and docs/design.md.
   */
  readonly latencySpikeRatio: number;
  readonly latencySpikeMinMillis: number;
  /** Fewest spans, of the node and of its other nodes, and fewest slow spans of the node, for a latency verdict. */
  readonly latencySpikeMinSpans: number;
}

export function defaultDetectorConfig(): DetectorConfig {
  return Object.freeze({
    keyNamespace: 'global' as const,
    retryHorizonMillis: 24 * 60 * 60 * 1000,
    maxKeys: 1_000_000,
    maxAttemptsPerKey: 10_000,
    maxCoverageEntries: 1_000_000,
    coverageKeysOneIn: 8,
    maxStoresPerFinding: 100,
    maxStoresPerIncident: 1_000,
    maxTiers: 10_000,
    replayHeaderMinRepeats: 10,
    incidentBucketMillis: 60 * 60 * 1000,
    quietPeriodMillis: 30 * 60 * 1000,
    routingSlackMillis: 1000,
    allowedLatenessMillis: 10_000,
    silenceMinMillis: 5_000,
    silenceMinExpectedSpans: 20,
    errorSpikeRatio: 0.5,
    errorSpikeMinMillis: 3_000,
    errorSpikeMinSpans: 5,
    latencySpikeRatio: 3,
    latencySpikeMinMillis: 5_000,
    latencySpikeMinSpans: 5,
  });
}
