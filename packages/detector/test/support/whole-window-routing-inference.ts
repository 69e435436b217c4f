/*
 * Routing inference in its plain form. It runs the same clock (closed-edge.ts), finders (node-down.ts, error-spikes.ts,
 * slowdowns.ts over runs.ts), event builders and failover composition as `RoutingInference`, and
 * differs from it only in reading the whole window again on every refresh: it keeps activity in
 * plain maps, and each inference rebuilds a service's and its nodes' active buckets from every
 * closed bucket and hands them to new finders from the first bucket on (`from` of -∞), which judge
 * every latency verdict afresh. `RoutingInference` keeps its finders across inferences, with their
 * runs, verdicts and running sums, and reads again only the buckets from where activity changed;
 * routing-inference.test.ts drives both with the same random streams and holds it to exactly these
 * events after every step. So that property covers what incrementality adds (which buckets are
 * read again, what is kept and continued, pruning's front, the active buckets' upkeep as activity
 * arrives out of order); what a finder judges and how an event is built is shared, and is for the
 * finders' own tests and the lab recordings to hold. Not for production: its cost per refresh grows
 * with the window.
 */

import { addLatency, emptyLatency, type NodeActivity, type Placement } from '@keyscope/attempts';
import { ActiveBuckets } from '../../src/routing/active-buckets.ts';
import type {
  FinderScope,
  LatencyHistograms,
  NodeActivitySeries,
  ServiceActivity,
} from '../../src/routing/activity-series.ts';
import { ErrorSpikeFinder } from '../../src/routing/error-spikes.ts';
import { EventWindow } from '../../src/routing/event-window.ts';
import { composeFailovers } from '../../src/routing/failover.ts';
import { NodeDownFinder } from '../../src/routing/node-down.ts';
import { compareEvents, type RoutingEvent } from '../../src/routing/routing-event.ts';
import { ACTIVITY_WINDOW_MILLIS } from '../../src/routing/routing-inference.ts';
import { SlowdownFinder } from '../../src/routing/slowdowns.ts';

interface NodeSeries {
  placement: Placement;
  /** Bucket index → [spans, errors]. */
  buckets: Map<number, [number, number]>;
  /** Bucket index → duration histogram (`NodeActivity.latency`), for buckets whose samples had one. */
  latency: Map<number, number[]>;
}

interface ServiceSeries {
  nodes: Map<string, NodeSeries>;
  /** Bucket index → [spans, errors] of all nodes. */
  totals: Map<number, [number, number]>;
  /** Bucket index → duration histogram of all nodes. */
  latencyTotals: Map<number, number[]>;
  /** Bucket index → how many latency samples of any node it took. */
  latencyVersions: Map<number, number>;
  /** Counts of a bucket the cached events were inferred from changed (late activity). */
  dirty: boolean;
  events: RoutingEvent[];
  /** The closed index (see RoutingInference) the cached events were inferred up to. */
  inferredClosedIndex: number;
}

/**
 * Keeps per-node traffic counts and infers routing events from them, on event time behind a
 * watermark. The counts are commutative, so they do not depend on arrival order; what could is
 * inferring from the edge of what has arrived, where a node whose spans are late looks silent. So
 * events are inferred only from *closed* buckets: a second is closed once the newest activity seen
 * is `allowedLatenessMillis` past it, or the clock `advanceClock` is given is (an idle input, or one
 * that stopped), or after `closeAll` (the end of a file). Activity that arrives for a closed second
 * still counts, and the events are inferred again from it: an event it disproves disappears, one it
 * moves is reported anew (DetectorChanges carries both), and findings are re-judged. Seconds closed
 * past the newest activity hold none and infer nothing: inference reads up to the newest activity.
 *
 * Inference is recomputed per service, over the whole window, on demand when that service's closed
 * counts changed.
 */
export class WholeWindowRoutingInference extends EventWindow<ServiceSeries> {
  private bucketSize = 1000;

  protected get bucketMillis(): number {
    return this.bucketSize;
  }

  record(activity: readonly NodeActivity[]): void {
    for (const sample of activity) {
      this.bucketSize = sample.bucketMillis;
      const placement = sample.placement;
      let service = this.services.get(placement.service);
      if (service === undefined) {
        service = {
          nodes: new Map(),
          totals: new Map(),
          latencyTotals: new Map(),
          latencyVersions: new Map(),
          dirty: true,
          events: [],
          inferredClosedIndex: Number.NEGATIVE_INFINITY,
        };
        this.services.set(placement.service, service);
      }
      const nodeKey = placement.node;
      let node = service.nodes.get(nodeKey);
      if (node === undefined) {
        node = { placement, buckets: new Map(), latency: new Map() };
        service.nodes.set(nodeKey, node);
      }
      const index = Math.floor(sample.bucketStartUnixMillis / sample.bucketMillis);
      addCounts(node.buckets, index, sample);
      addCounts(service.totals, index, sample);
      if (sample.latency !== undefined) {
        addLatency(histogramAt(node.latency, index), sample.latency);
        addLatency(histogramAt(service.latencyTotals, index), sample.latency);
        service.latencyVersions.set(index, (service.latencyVersions.get(index) ?? 0) + 1);
      }
      // A bucket beyond what was inferred changes nothing until the watermark passes it.
      if (index < service.inferredClosedIndex) service.dirty = true;
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
      let removed = false;
      for (const node of series.nodes.values()) {
        for (const index of node.buckets.keys()) {
          if (index < cutoffIndex) {
            node.buckets.delete(index);
            removed = true;
          }
        }
        for (const index of node.latency.keys()) if (index < cutoffIndex) node.latency.delete(index);
      }
      for (const index of series.latencyVersions.keys())
        if (index < cutoffIndex) series.latencyVersions.delete(index);
      for (const index of series.totals.keys()) if (index < cutoffIndex) series.totals.delete(index);
      for (const index of series.latencyTotals.keys())
        if (index < cutoffIndex) series.latencyTotals.delete(index);
      for (const [key, node] of series.nodes) if (node.buckets.size === 0) series.nodes.delete(key);
      if (removed) series.dirty = true;
    }
    const horizon = this.edge.newestUnixMillis - this.config.retryHorizonMillis;
    for (const [id, event] of this.frozen) if (event.endUnixMillis < horizon) this.frozen.delete(id);
  }

  /** The service's events in its buckets below `closedIndex`, read from its first bucket on. */
  protected infer(service: string, series: ServiceSeries, closedIndex: number): RoutingEvent[] {
    const scope: FinderScope = {
      config: this.config,
      bucketMillis: this.bucketMillis,
      bucketReads: 0,
      latencyJudgements: 0,
    };
    const activity: ServiceActivity = {
      totals: closedBuckets(series.totals, closedIndex, scope),
      latencyTotals: histogramsOf(series.latencyTotals),
      latencyVersions: series.latencyVersions,
    };
    const downs: RoutingEvent[] = [];
    const spikes: RoutingEvent[] = [];
    for (const node of series.nodes.values()) {
      const read: NodeActivitySeries = {
        placement: node.placement,
        buckets: closedBuckets(node.buckets, closedIndex, scope),
        latency: histogramsOf(node.latency),
      };
      const nodeDowns = new NodeDownFinder(scope, activity, read);
      const errorSpikes = new ErrorSpikeFinder(scope, read);
      const slowdowns = new SlowdownFinder(scope, activity, read);
      nodeDowns.find(Number.NEGATIVE_INFINITY, closedIndex);
      errorSpikes.find(Number.NEGATIVE_INFINITY, closedIndex);
      slowdowns.find(Number.NEGATIVE_INFINITY, closedIndex);
      downs.push(...nodeDowns.events);
      spikes.push(...errorSpikes.events, ...slowdowns.events);
    }
    return [...composeFailovers(service, series.nodes, downs), ...spikes].sort(compareEvents);
  }
}

/** Active buckets, built afresh, of the buckets of `counts` below `closedIndex`. */
function closedBuckets(
  counts: Map<number, [number, number]>,
  closedIndex: number,
  scope: FinderScope,
): ActiveBuckets {
  const buckets = new ActiveBuckets(scope);
  const indexes = [...counts.keys()].filter((index) => index < closedIndex).sort((a, b) => a - b);
  for (const index of indexes) buckets.add(index, ...counts.get(index)!);
  return buckets;
}

/** Counts a sample's spans and errors into bucket `index` of `counts`. */
function addCounts(counts: Map<number, [number, number]>, index: number, sample: NodeActivity): void {
  const bucket = counts.get(index);
  if (bucket === undefined) counts.set(index, [sample.spans, sample.errors]);
  else {
    bucket[0] += sample.spans;
    bucket[1] += sample.errors;
  }
}

/** The histogram of `index`, created empty if there is none yet. */
function histogramAt(histograms: Map<number, number[]>, index: number): number[] {
  let histogram = histograms.get(index);
  if (histogram === undefined) histograms.set(index, (histogram = emptyLatency()));
  return histogram;
}

/** A plain map of histograms as the finders read histograms (`LatencyColumns` in production). */
function histogramsOf(histograms: Map<number, number[]>): LatencyHistograms {
  return {
    get size() {
      return histograms.size;
    },
    has: (index) => histograms.has(index),
    addTo(index, into, sign = 1) {
      const counts = histograms.get(index);
      if (counts === undefined) return false;
      for (let i = 0; i < into.length; i++) into[i]! += sign * (counts[i] ?? 0);
      return true;
    },
  };
}
