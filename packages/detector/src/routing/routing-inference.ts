import type { NodeActivity, Placement } from '@keyscope/attempts';
import type { DetectorConfig } from '../config.ts';
import { ActiveBuckets } from './active-buckets.ts';
import type { FinderScope, NodeActivitySeries, ServiceActivity } from './activity-series.ts';
import { ErrorSpikeFinder } from './error-spikes.ts';
import { EventWindow } from './event-window.ts';
import { composeFailovers } from './failover.ts';
import { LatencyColumns } from './latency-columns.ts';
import { NodeDownFinder } from './node-down.ts';
import { NumberColumn } from './number-column.ts';
import { compareEvents, type RoutingEvent } from './routing-event.ts';
import { SlowdownFinder } from './slowdowns.ts';

/** How much activity is kept to infer events from; older events are frozen as they were. */
export const ACTIVITY_WINDOW_MILLIS = 2 * 60 * 60 * 1000;

/** A node's activity as it arrives, and its finders, which keep what they found in it. */
class NodeSeries implements NodeActivitySeries {
  readonly buckets: ActiveBuckets;
  readonly latency = new LatencyColumns();
  readonly downs: NodeDownFinder;
  readonly errorSpikes: ErrorSpikeFinder;
  readonly slowdowns: SlowdownFinder;

  constructor(
    readonly placement: Placement,
    scope: FinderScope,
    service: ServiceActivity,
  ) {
    this.buckets = new ActiveBuckets(scope);
    this.downs = new NodeDownFinder(scope, service, this);
    this.errorSpikes = new ErrorSpikeFinder(scope, this);
    this.slowdowns = new SlowdownFinder(scope, service, this);
  }
}

interface ServiceSeries extends ServiceActivity {
  nodes: Map<string, NodeSeries>;
  readonly latencyTotals: LatencyColumns;
  readonly latencyVersions: NumberColumn;
  /** Counts of a bucket the cached events were inferred from changed (late activity). */
  dirty: boolean;
  /**
   * The earliest bucket below `inferredClosedIndex` whose counts changed since the last inference
   * (late activity): what the node finders found holds below it. +∞ if none.
   */
  changedFrom: number;
  events: RoutingEvent[];
  /** The closed index (see RoutingInference) the cached events were inferred up to. */
  inferredClosedIndex: number;
}

/**
 * Keeps per-node traffic counts and infers routing events from them, on event time behind a
 * watermark. The counts are commutative, so they do not depend on arrival order; what could is
 * inferring from the edge of what has arrived, where a node whose spans are late looks silent. So
 * events are inferred only from *closed* buckets: a second is closed once the newest activity seen
 * is `allowedLatenessMillis` past it, or the clock `advanceClock` is given is (see there: an idle
 * input, or one that stopped), or after `closeAll` (the end of a file). Activity that arrives for a
 * closed second still counts, and the events are inferred again from it: an event it disproves
 * disappears, one it moves is reported anew (DetectorChanges carries both), and findings are
 * re-judged.
 *
 * Seconds closed past the newest activity seen hold none, and infer nothing: inference reads up to
 * the newest activity, and a silence still open there ends there for now. So when a service's
 * traffic stops, its events and the findings judged on them stay as they were while the closed
 * edge moves on, and what waits on it (an incident's settling) does not wait for traffic to return.
 *
 * Inference runs per service on demand when that service's closed counts changed, and is
 * incremental: it keeps what it found in each node's buckets and reads again only the buckets
 * from the earliest one that changed or newly closed, plus what a finding there looks back at (the
 * active bucket a silence follows, the run a spike may continue), so its cost per closed second
 * does not grow with the two-hour window (`bucketReads`). Its events are exactly those of reading
 * the whole window again, for any activity in any order (routing-inference.test.ts holds it to
 * that). Pruning re-infers the same way from the other end: what the dropped buckets bore on.
 *
 * This class owns the activity, the clock and which buckets each inference reads again; each node's
 * finders (node-down.ts, error-spikes.ts, slowdowns.ts) own what they found in its buckets, and
 * failover.ts composes the silences of whole clusters and regions.
 */
export class RoutingInference extends EventWindow<ServiceSeries> {
  /** Ids of frozen events `prune` forgot past the retry horizon since `takeExpired` last took them. */
  private expired: string[] = [];
  /** What the finders read besides activity (the bucket size follows the samples), and their counts. */
  private readonly scope: FinderScope & { bucketMillis: number };

  constructor(config: DetectorConfig) {
    super(config);
    this.scope = { config, bucketMillis: 1000, bucketReads: 0, latencyJudgements: 0 };
  }

  /** Buckets whose latency was judged against the node's peers, ever. */
  get latencyJudgements(): number {
    return this.scope.latencyJudgements;
  }

  /** Buckets inference (and its running sums) read, ever: what inference costs. */
  get bucketReads(): number {
    return this.scope.bucketReads;
  }

  protected get bucketMillis(): number {
    return this.scope.bucketMillis;
  }

  record(activity: readonly NodeActivity[]): void {
    for (const sample of activity) {
      if (sample.bucketMillis !== this.bucketMillis) {
        // Every bucket index means another time now: what was found is read again in full.
        this.scope.bucketMillis = sample.bucketMillis;
        for (const series of this.services.values()) series.changedFrom = Number.NEGATIVE_INFINITY;
      }
      const placement = sample.placement;
      let service = this.services.get(placement.service);
      if (service === undefined) {
        service = {
          nodes: new Map(),
          totals: new ActiveBuckets(this.scope),
          latencyTotals: new LatencyColumns(),
          latencyVersions: new NumberColumn(),
          dirty: true,
          changedFrom: Number.POSITIVE_INFINITY,
          events: [],
          inferredClosedIndex: Number.NEGATIVE_INFINITY,
        };
        this.services.set(placement.service, service);
      }
      const nodeKey = placement.node;
      let node = service.nodes.get(nodeKey);
      if (node === undefined) {
        node = new NodeSeries(placement, this.scope, service);
        service.nodes.set(nodeKey, node);
      }
      const index = Math.floor(sample.bucketStartUnixMillis / sample.bucketMillis);
      node.buckets.add(index, sample.spans, sample.errors);
      service.totals.add(index, sample.spans, sample.errors);
      if (sample.latency !== undefined) {
        node.latency.add(index, sample.latency);
        service.latencyTotals.add(index, sample.latency);
        service.latencyVersions.set(index, (service.latencyVersions.get(index) ?? 0) + 1);
      }
      // A bucket beyond what was inferred changes nothing until the watermark passes it.
      if (index < service.inferredClosedIndex) {
        service.dirty = true;
        if (index < service.changedFrom) service.changedFrom = index;
      }
      this.edge.saw(sample.bucketStartUnixMillis + sample.bucketMillis);
    }
    this.edge.closeBehindNewest();
  }

  /** Drops activity older than the window, freezing the events that ended before it. */
  prune(): void {
    const cutoffIndex = Math.floor((this.edge.newestUnixMillis - ACTIVITY_WINDOW_MILLIS) / this.bucketMillis);
    const cutoffMillis = cutoffIndex * this.bucketMillis;
    for (const [name, series] of this.services) {
      this.freezeEndedBefore(name, series, cutoffMillis);
      // Every node's bucket is one of the service's: nothing of the service is old, none of a node.
      if (series.totals.size === 0 || series.totals.indexAt(0) >= cutoffIndex) continue;
      series.totals.dropBelow(cutoffIndex, (index) => {
        series.latencyTotals.delete(index);
        series.latencyVersions.delete(index);
      });
      for (const [key, node] of series.nodes) {
        const dropped = node.buckets.dropBelow(cutoffIndex, (index) => {
          node.latency.delete(index);
          node.slowdowns.forgetVerdict(index);
        });
        node.slowdowns.forgetVerdictsCutAt(cutoffIndex);
        if (node.buckets.size === 0) {
          series.nodes.delete(key);
          continue;
        }
        // Unless the node is read again in full anyway (`record`), what it found is kept in step.
        if (series.changedFrom === Number.NEGATIVE_INFINITY) continue;
        // What the dropped buckets bore on is found again, in the buckets below the inferred edge.
        if (dropped > 0) {
          node.downs.findFrontAgain(series.inferredClosedIndex);
          node.errorSpikes.findFrontAgain(cutoffIndex);
        }
        node.slowdowns.findFrontAgain(cutoffIndex, series.inferredClosedIndex);
      }
      series.dirty = true;
    }
    const horizon = this.edge.newestUnixMillis - this.config.retryHorizonMillis;
    for (const [id, event] of this.frozen) {
      if (event.endUnixMillis >= horizon) continue;
      this.frozen.delete(id);
      this.expired.push(id);
    }
  }

  /**
   * The ids of events forgotten past the retry horizon since the last call: still true, only no
   * longer needed to judge keys, so not retractions (a store keeps them for its own retention).
   */
  takeExpired(): string[] {
    const expired = this.expired;
    this.expired = [];
    return expired;
  }

  /**
   * The service's events in its buckets below `closedIndex`; a new event type adds its finder here.
   * What each node's buckets below `from` gave is kept as found: only the buckets from there on,
   * and what a finding there looks back at, are read.
   */
  protected infer(service: string, series: ServiceSeries, closedIndex: number): RoutingEvent[] {
    // Buckets below the last inference's closed index and the earliest change are as they were.
    const from = Math.min(series.changedFrom, series.inferredClosedIndex);
    series.changedFrom = Number.POSITIVE_INFINITY;
    const downs: RoutingEvent[] = [];
    const spikes: RoutingEvent[] = [];
    // Summed as they close, each bucket once, rather than all at once when a silence first needs them.
    series.totals.sumBelow(closedIndex);
    for (const node of series.nodes.values()) {
      node.buckets.sumBelow(closedIndex);
      node.downs.find(from, closedIndex);
      node.errorSpikes.find(from, closedIndex);
      node.slowdowns.find(from, closedIndex);
      for (const event of node.downs.events) downs.push(event);
      for (const event of node.errorSpikes.events) spikes.push(event);
      for (const event of node.slowdowns.events) spikes.push(event);
    }
    return [...composeFailovers(service, series.nodes, downs), ...spikes].sort(compareEvents);
  }
}
