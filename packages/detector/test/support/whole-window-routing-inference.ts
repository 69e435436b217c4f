/*
 * Routing inference in its plain form: every refresh reads the whole activity window of the
 * service again (every bucket of every node, the service's running sums rebuilt from scratch).
 * The same public surface as `RoutingInference`, whose incremental inference must give exactly
 * these events for any activity in any order; routing-inference.test.ts drives both with the same
 * random streams and compares them after every step. Not for production: its cost per refresh
 * grows with the window.
 */
import { addLatency, emptyLatency, type NodeActivity, type Placement } from '@keyscope/attempts';
import type { DetectorConfig } from '../../src/config.ts';
import { stableId } from '../../src/ids.ts';
import { BASELINE_BUCKETS } from '../../src/routing/activity-series.ts';
import type { RoutingEvent } from '../../src/routing/routing-event.ts';
import { ACTIVITY_WINDOW_MILLIS } from '../../src/routing/routing-inference.ts';
import {
  shareFrom,
  slowdownDescription,
  slowerThan,
  slowShareOf,
  spansPast,
} from '../../src/routing/slow-share.ts';
import {
  SLOW_OWN_BUCKETS,
  SLOW_PAST_RATIO,
  SLOW_PEER_BUCKETS,
  SLOW_RUN_MAX_STEP,
  SLOW_RUN_SIGMAS,
  SLOW_SECOND_RATIO,
} from '../../src/routing/slowdowns.ts';

interface NodeSeries {
  placement: Placement;
  /** Bucket index → [spans, errors]. */
  buckets: Map<number, [number, number]>;
  /** Bucket index → duration histogram (`NodeActivity.latency`), for buckets whose samples had one. */
  latency: Map<number, number[]>;
  /** The keys of `latency`, ascending: buckets mostly arrive in order, so this is kept, not sorted per inference. */
  latencyOrder: number[];
  /**
   * Whether the node was slow against its peers in a bucket, as of that bucket's version in
   * `ServiceSeries.latencyVersions`: a bucket nobody's activity touched since is not judged again.
   */
  slowness: Map<number, { version: number; slow: boolean }>;
}

interface ServiceSeries {
  nodes: Map<string, NodeSeries>;
  /** Bucket index → spans of all nodes. */
  totals: Map<number, number>;
  /** Bucket index → duration histogram of all nodes. */
  latencyTotals: Map<number, number[]>;
  /** Bucket index → how many latency samples of any node it took: what `NodeSeries.slowness` checks. */
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
export class WholeWindowRoutingInference {
  private readonly services = new Map<string, ServiceSeries>();
  private readonly frozen = new Map<string, RoutingEvent>();
  private bucketMillis = 1000;
  /** End of the newest bucket seen. */
  private newestUnixMillis = Number.NEGATIVE_INFINITY;
  /** Activity before this is final (monotone); see the class comment. */
  private closedUnixMillis = Number.NEGATIVE_INFINITY;
  /** The newest activity's end as `advanceClock` last saw it, and the clock when it first did. */
  private newestAsOf = { newestUnixMillis: Number.NEGATIVE_INFINITY, clockUnixMillis: 0 };
  /** Buckets whose latency was judged against the node's peers, ever: what inference costs. */
  latencyJudgements = 0;

  constructor(private readonly config: DetectorConfig) {}

  record(activity: readonly NodeActivity[]): void {
    for (const sample of activity) {
      this.bucketMillis = sample.bucketMillis;
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
        node = { placement, buckets: new Map(), latency: new Map(), latencyOrder: [], slowness: new Map() };
        service.nodes.set(nodeKey, node);
      }
      const index = Math.floor(sample.bucketStartUnixMillis / sample.bucketMillis);
      const counts = node.buckets.get(index);
      if (counts === undefined) node.buckets.set(index, [sample.spans, sample.errors]);
      else {
        counts[0] += sample.spans;
        counts[1] += sample.errors;
      }
      service.totals.set(index, (service.totals.get(index) ?? 0) + sample.spans);
      if (sample.latency !== undefined) {
        if (!node.latency.has(index)) insertSorted(node.latencyOrder, index);
        addLatency(histogramAt(node.latency, index), sample.latency);
        addLatency(histogramAt(service.latencyTotals, index), sample.latency);
        service.latencyVersions.set(index, (service.latencyVersions.get(index) ?? 0) + 1);
      }
      // A bucket beyond what was inferred changes nothing until the watermark passes it.
      if (index < service.inferredClosedIndex) service.dirty = true;
      const end = sample.bucketStartUnixMillis + sample.bucketMillis;
      if (end > this.newestUnixMillis) this.newestUnixMillis = end;
    }
    this.close(this.newestUnixMillis - this.config.allowedLatenessMillis);
  }

  /**
   * Closes what the clock says is final: every second `allowedLatenessMillis` before `nowUnixMillis`
   * that activity has arrived up to, or that has passed since the newest activity arrived (the
   * clock of the first call that saw it; less the lateness if it arrived later than that).
   */
  advanceClock(nowUnixMillis: number): void {
    if (this.newestUnixMillis === Number.NEGATIVE_INFINITY) return;
    if (this.newestAsOf.newestUnixMillis !== this.newestUnixMillis)
      this.newestAsOf = { newestUnixMillis: this.newestUnixMillis, clockUnixMillis: nowUnixMillis };
    const lateness = this.config.allowedLatenessMillis;
    const quietMillis = Math.max(0, nowUnixMillis - this.newestAsOf.clockUnixMillis);
    // Activity that arrived later than the lateness is a backlog being read, which may pause
    // between batches: the clock moves past it only once it has been quiet for the lateness too.
    const late = this.newestAsOf.clockUnixMillis - this.newestUnixMillis > lateness;
    const pastNewest = late ? Math.max(0, quietMillis - lateness) : quietMillis;
    this.close(Math.min(this.newestUnixMillis + pastNewest, nowUnixMillis - lateness));
  }

  /** Closes everything seen: the input is complete. */
  closeAll(): void {
    this.close(this.newestUnixMillis);
  }

  /** Whether any activity of `service` has been seen. */
  knows(service: string): boolean {
    return this.services.has(service);
  }

  /** Activity before this time is final. */
  closedUnixMillisNow(): number {
    return this.closedUnixMillis;
  }

  /**
   * How much closed activity after an event's start its inference needs: a finding whose repeat is
   * this far behind the closed edge has seen every event that could have broken its retry path.
   * A new event type adds the time it needs here.
   */
  detectionHorizonMillis(): number {
    return (
      Math.max(
        this.config.silenceMinMillis,
        this.config.errorSpikeMinMillis,
        this.config.latencySpikeMinMillis,
      ) + this.bucketMillis
    );
  }

  /**
   * Events of one service, for judging a key right now. Re-inferred only once the closed edge has
   * moved on by a silence's worth of buckets: inference reads the whole activity window, and
   * re-running it on every batch made detection quadratic in the window. Anything this misses is
   * caught by `all()`, which `tick`/`flush` use to re-group findings.
   */
  eventsOf(service: string): readonly RoutingEvent[] {
    const series = this.services.get(service);
    const step = Math.max(1, Math.ceil(this.config.silenceMinMillis / this.bucketMillis));
    const stale = series !== undefined && this.closedIndex() - series.inferredClosedIndex >= step;
    const live = series === undefined ? [] : stale ? this.refresh(service, series) : series.events;
    if (this.frozen.size === 0) return live;
    const frozen = [...this.frozen.values()].filter((event) => event.service === service);
    return frozen.length === 0 ? live : [...frozen, ...live];
  }

  all(): RoutingEvent[] {
    const out = [...this.frozen.values()];
    for (const [name, series] of this.services)
      for (const event of this.refresh(name, series)) out.push(event);
    return out.sort(compareEvents);
  }

  /** Drops activity older than the window, freezing the events that ended before it. */
  prune(): void {
    const cutoffIndex = Math.floor((this.newestUnixMillis - ACTIVITY_WINDOW_MILLIS) / this.bucketMillis);
    const cutoffMillis = cutoffIndex * this.bucketMillis;
    for (const [name, series] of this.services) {
      for (const event of this.refresh(name, series)) {
        if (event.ended && event.endUnixMillis < cutoffMillis) this.frozen.set(event.id, event);
      }
      let removed = false;
      for (const node of series.nodes.values()) {
        for (const index of node.buckets.keys()) {
          if (index < cutoffIndex) {
            node.buckets.delete(index);
            removed = true;
          }
        }
        const kept = lowerBound(node.latencyOrder, cutoffIndex);
        for (const index of node.latencyOrder.splice(0, kept)) {
          node.latency.delete(index);
          node.slowness.delete(index);
        }
      }
      for (const index of series.latencyVersions.keys())
        if (index < cutoffIndex) series.latencyVersions.delete(index);
      for (const index of series.totals.keys()) if (index < cutoffIndex) series.totals.delete(index);
      for (const index of series.latencyTotals.keys())
        if (index < cutoffIndex) series.latencyTotals.delete(index);
      for (const [key, node] of series.nodes) if (node.buckets.size === 0) series.nodes.delete(key);
      if (removed) series.dirty = true;
    }
    const horizon = this.newestUnixMillis - this.config.retryHorizonMillis;
    for (const [id, event] of this.frozen) if (event.endUnixMillis < horizon) this.frozen.delete(id);
  }

  private close(untilUnixMillis: number): void {
    if (untilUnixMillis > this.closedUnixMillis) this.closedUnixMillis = untilUnixMillis;
  }

  /** Buckets below this index are closed and inferred from: none past the newest activity. */
  private closedIndex(): number {
    return Math.floor(Math.min(this.closedUnixMillis, this.newestUnixMillis) / this.bucketMillis);
  }

  private refresh(name: string, series: ServiceSeries): RoutingEvent[] {
    const closedIndex = this.closedIndex();
    if (series.dirty || closedIndex !== series.inferredClosedIndex) {
      series.events = this.infer(name, series, closedIndex).filter((event) => !this.frozen.has(event.id));
      series.dirty = false;
      series.inferredClosedIndex = closedIndex;
    }
    return series.events;
  }

  /** The service's events in its buckets below `closedIndex`; a new event type adds its finder here. */
  private infer(service: string, series: ServiceSeries, closedIndex: number): RoutingEvent[] {
    const totals = serviceTotals(series.totals, closedIndex);
    if (totals.indexes.length === 0) return [];
    const lastClosed = closedIndex - 1;

    const downs: RoutingEvent[] = [];
    const spikes: RoutingEvent[] = [];
    for (const node of series.nodes.values()) {
      const indexes = [...node.buckets.keys()].filter((index) => index < closedIndex).sort((a, b) => a - b);
      if (indexes.length === 0) continue;
      this.findSilences(service, totals, node, indexes, lastClosed, downs);
      this.findSpikes(service, node, indexes, spikes);
      this.findSlowdowns(service, series, node, closedIndex, spikes);
    }
    return [...this.composeFailovers(service, series, downs), ...spikes].sort(compareEvents);
  }

  /**
   * Silences are the gaps between a node's active buckets, and their cost is the buckets that
   * hold data, never the gap's length: the service's traffic during a gap comes from prefix sums
   * over its sorted active buckets (two spans at times 0 and 2^53 ms are two buckets, not 2^43).
   */
  private findSilences(
    service: string,
    totals: ServiceTotals,
    node: NodeSeries,
    indexes: number[],
    lastClosed: number,
    out: RoutingEvent[],
  ): void {
    const minBuckets = Math.max(1, Math.ceil(this.config.silenceMinMillis / this.bucketMillis));
    const firstIndex = indexes[0]!;
    for (let i = 0; i < indexes.length; i++) {
      const lastActive = indexes[i]!;
      // A silence still open at the closed edge ends there, for now (`ended: false`).
      const nextActive = i + 1 < indexes.length ? indexes[i + 1]! : lastClosed + 1;
      if (nextActive - lastActive - 1 < minBuckets) continue;
      // A silence of the whole service is an outage or a lull, not traffic moving away from this
      // node: what counts is how much the node should have served at its usual share.
      const from = upperBound(totals.indexes, lastActive);
      const to = lowerBound(totals.indexes, nextActive);
      const servedElsewhere = totals.servingBefore[to]! - totals.servingBefore[from]!;
      const serviceSpansDuring = totals.spansBefore[to]! - totals.spansBefore[from]!;
      if (servedElsewhere < minBuckets) continue;
      const baselineFrom = Math.max(firstIndex, lastActive + 1 - BASELINE_BUCKETS);
      let nodeSpans = 0;
      for (let j = i; j >= 0 && indexes[j]! >= baselineFrom; j--)
        nodeSpans += node.buckets.get(indexes[j]!)![0];
      const baselineAt = lowerBound(totals.indexes, baselineFrom);
      const serviceSpans = totals.spansBefore[from]! - totals.spansBefore[baselineAt]!;
      const expected = serviceSpans === 0 ? 0 : (nodeSpans / serviceSpans) * serviceSpansDuring;
      if (expected < this.config.silenceMinExpectedSpans) continue;
      const ended = nextActive <= lastClosed;
      const startUnixMillis = (lastActive + 1) * this.bucketMillis;
      const endUnixMillis = nextActive * this.bucketMillis;
      const p = node.placement;
      out.push({
        id: stableId('re', ['node_down', service, p.node, startUnixMillis]),
        type: 'node_down',
        service,
        node: p.node,
        cluster: p.cluster,
        region: p.region,
        startUnixMillis,
        endUnixMillis,
        ended,
        description: `${service} node ${p.node} emitted no server spans for ${formatSeconds(
          endUnixMillis - startUnixMillis,
        )}${ended ? '' : ' (still silent)'} while other nodes of ${service} kept serving`,
      });
    }
  }

  private findSpikes(service: string, node: NodeSeries, indexes: number[], out: RoutingEvent[]): void {
    const minBuckets = Math.max(1, Math.ceil(this.config.errorSpikeMinMillis / this.bucketMillis));
    // Runs of spiking buckets; a run resumed within `minBuckets` is the same spike (one healthy
    // second inside an outage must not split it into two events and two pages).
    const runs: [number, number][] = [];
    for (const index of indexes) {
      const [spans, errors] = node.buckets.get(index)!;
      if (spans < this.config.errorSpikeMinSpans || errors / spans < this.config.errorSpikeRatio) continue;
      const last = runs[runs.length - 1];
      if (last !== undefined && index - last[1] <= minBuckets) last[1] = index;
      else runs.push([index, index]);
    }
    for (const [first, runLast] of runs) {
      if (runLast - first + 1 < minBuckets) continue;
      const last = runLast;
      const startUnixMillis = first * this.bucketMillis;
      const endUnixMillis = (last + 1) * this.bucketMillis;
      const p = node.placement;
      out.push(
        spikeEvent(
          'error_spike',
          service,
          p,
          startUnixMillis,
          endUnixMillis,
          `${service} node ${p.node} failed ${Math.round(
            this.config.errorSpikeRatio * 100,
          )}% or more of its server spans for ${formatSeconds(endUnixMillis - startUnixMillis)}`,
        ),
      );
    }
  }

  /**
   * Brownouts: runs of buckets where the node was slow against its other nodes (`slowerThan`, 2×,
   * its last SLOW_OWN_BUCKETS against their last SLOW_PEER_BUCKETS; a run may skip up to three
   * buckets), at least `latencySpikeMinMillis` long, and over the whole run slower that way than
   * its other nodes over the same buckets (`latencySpikeRatio`) and its own BASELINE_BUCKETS before
   * (2×). Its cost is the node's buckets that carry latency, like the other finders.
   */
  private findSlowdowns(
    service: string,
    series: ServiceSeries,
    node: NodeSeries,
    closedIndex: number,
    out: RoutingEvent[],
  ): void {
    if (node.latency.size === 0) return;
    const { latencySpikeRatio: ratio, latencySpikeMinSpans: minSpans } = this.config;
    const minBuckets = Math.max(1, Math.ceil(this.config.latencySpikeMinMillis / this.bucketMillis));
    const order = node.latencyOrder;
    const closedEnd = lowerBound(order, closedIndex);
    const others = emptyLatency();
    const peersOf = (index: number): number[] => {
      const all = series.latencyTotals.get(index)!;
      const own = node.latency.get(index);
      for (let i = 0; i < others.length; i++) others[i] = all[i]! - (own?.[i] ?? 0);
      return others;
    };
    // Read afresh each time.
    const slowAt = (index: number): boolean => {
      this.latencyJudgements++;
      const mine = emptyLatency();
      const peers = emptyLatency();
      for (let back = 0; back < Math.max(SLOW_OWN_BUCKETS, SLOW_PEER_BUCKETS); back++) {
        if (!series.latencyTotals.has(index - back)) continue;
        const own = node.latency.get(index - back);
        if (back < SLOW_OWN_BUCKETS && own !== undefined) addLatency(mine, own);
        if (back < SLOW_PEER_BUCKETS) addLatency(peers, peersOf(index - back));
      }
      return (
        total(mine) >= minSpans &&
        total(peers) >= minSpans &&
        slowerThan(mine, peers, { ratio: SLOW_SECOND_RATIO, minSpans, sigmas: 0 })
      );
    };
    const runs: [number, number][] = [];
    for (let at = 0; at < closedEnd; at++) {
      const index = order[at]!;
      if (!slowAt(index)) continue;
      const last = runs[runs.length - 1];
      if (last !== undefined && index - last[1] <= SLOW_RUN_MAX_STEP) last[1] = index;
      else runs.push([index, index]);
    }
    for (const [first, runLast] of runs) {
      if (runLast - first + 1 < minBuckets) continue;
      let last = runLast;
      const during = emptyLatency();
      const peersDuring = emptyLatency();
      const before = emptyLatency();
      for (let at = lowerBound(order, first - BASELINE_BUCKETS); at < closedEnd && order[at]! <= last; at++) {
        const index = order[at]!;
        if (index < first) addLatency(before, node.latency.get(index)!);
        else {
          addLatency(during, node.latency.get(index)!);
          addLatency(peersDuring, peersOf(index));
        }
      }
      // The last second, slow for the one before only: no part of the event.
      const lastOwn = node.latency.get(last)!;
      const bound = slowShareOf(during, peersDuring);
      if (bound !== undefined && spansPast(lastOwn, bound.boundMillis) === 0) {
        if (last - first < minBuckets) continue;
        for (let i = 0; i < during.length; i++) {
          during[i]! -= lastOwn[i]!;
          peersDuring[i]! -= series.latencyTotals.get(last)![i]! - lastOwn[i]!;
        }
        last--;
      }
      if (total(before) < minSpans || total(peersDuring) < minSpans) continue;
      if (
        !slowerThan(during, peersDuring, { ratio, minSpans, sigmas: SLOW_RUN_SIGMAS }) ||
        !slowerThan(during, before, { ratio: SLOW_PAST_RATIO, minSpans, sigmas: SLOW_RUN_SIGMAS })
      )
        continue;
      const peers = slowShareOf(during, peersDuring)!;
      const startUnixMillis = first * this.bucketMillis;
      const endUnixMillis = (last + 1) * this.bucketMillis;
      out.push(
        spikeEvent(
          'latency_spike',
          service,
          node.placement,
          startUnixMillis,
          endUnixMillis,
          slowdownDescription(service, node.placement.node, {
            startUnixMillis,
            endUnixMillis,
            baselineMillis: BASELINE_BUCKETS * this.bucketMillis,
            peers,
            pastShare: shareFrom(before, peers.boundMillis),
          }),
        ),
      );
    }
  }

  /**
   * Replaces node_down events by one cluster_failover or region_failover event when every node of
   * the service in that cluster or region went down in overlapping windows: one failover is one
   * event, so it becomes one incident and one page.
   */
  private composeFailovers(service: string, series: ServiceSeries, downs: RoutingEvent[]): RoutingEvent[] {
    let remaining = downs;
    const composed: RoutingEvent[] = [];
    for (const level of ['region', 'cluster'] as const) {
      const groups = new Map<string, { nodes: Set<string>; events: RoutingEvent[] }>();
      for (const node of series.nodes.values()) {
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
        let startUnixMillis = Number.POSITIVE_INFINITY;
        let endUnixMillis = Number.NEGATIVE_INFINITY;
        for (const event of together) {
          if (event.startUnixMillis < startUnixMillis) startUnixMillis = event.startUnixMillis;
          if (event.endUnixMillis > endUnixMillis) endUnixMillis = event.endUnixMillis;
        }
        const ended = together.every((e) => e.ended);
        const type = level === 'region' ? 'region_failover' : 'cluster_failover';
        const first = together[0]!;
        composed.push({
          id: stableId('re', [type, service, name, startUnixMillis]),
          type,
          service,
          node: '',
          cluster: level === 'cluster' ? name : first.cluster,
          region: first.region,
          startUnixMillis,
          endUnixMillis,
          ended,
          description: `all ${group.nodes.size} nodes of ${service} in ${level} ${name} stopped serving for ${formatSeconds(
            endUnixMillis - startUnixMillis,
          )}${ended ? '' : ' (still down)'} while ${service} kept serving elsewhere`,
        });
        for (const event of together) absorbed.add(event);
      }
      remaining = remaining.filter((event) => !absorbed.has(event));
    }
    return [...composed, ...remaining];
  }
}

/**
 * A service's active buckets in order, with running sums: `spansBefore[i]` is the spans of the
 * buckets before `indexes[i]`, `servingBefore[i]` how many of them served any (both one longer
 * than `indexes`, so a range's sum is a difference of two entries).
 */
interface ServiceTotals {
  indexes: number[];
  spansBefore: Float64Array;
  servingBefore: Float64Array;
}

/** The running sums over the buckets below `closedIndex`. */
function serviceTotals(totals: Map<number, number>, closedIndex: number): ServiceTotals {
  const indexes = [...totals.keys()].filter((index) => index < closedIndex).sort((a, b) => a - b);
  const spansBefore = new Float64Array(indexes.length + 1);
  const servingBefore = new Float64Array(indexes.length + 1);
  for (let i = 0; i < indexes.length; i++) {
    const spans = totals.get(indexes[i]!)!;
    spansBefore[i + 1] = spansBefore[i]! + spans;
    servingBefore[i + 1] = servingBefore[i]! + (spans > 0 ? 1 : 0);
  }
  return { indexes, spansBefore, servingBefore };
}

/** The first position in ascending `sorted` whose value is at least `value` (its length if none). */
function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first position in ascending `sorted` whose value is greater than `value` (its length if none). */
function upperBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
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

function compareEvents(a: RoutingEvent, b: RoutingEvent): number {
  return a.startUnixMillis - b.startUnixMillis || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function formatSeconds(millis: number): string {
  return `${Math.round(millis / 1000)} s`;
}

function total(counts: readonly number[]): number {
  let sum = 0;
  for (const count of counts) sum += count;
  return sum;
}

/** The histogram of `index`, created empty if there is none yet. */
/** Inserts `value` into ascending `sorted`; appending, the usual case, costs one comparison. */
function insertSorted(sorted: number[], value: number): void {
  if (sorted.length === 0 || sorted[sorted.length - 1]! < value) sorted.push(value);
  else sorted.splice(lowerBound(sorted, value), 0, value);
}

function histogramAt(histograms: Map<number, number[]>, index: number): number[] {
  let histogram = histograms.get(index);
  if (histogram === undefined) histograms.set(index, (histogram = emptyLatency()));
  return histogram;
}

/** A spike on one node over whole buckets, closed: its id follows from type, service, node and start. */
function spikeEvent(
  type: 'error_spike' | 'latency_spike',
  service: string,
  placement: { node: string; cluster: string; region: string },
  startUnixMillis: number,
  endUnixMillis: number,
  description: string,
): RoutingEvent {
  return {
    id: stableId('re', [type, service, placement.node, startUnixMillis]),
    type,
    service,
    node: placement.node,
    cluster: placement.cluster,
    region: placement.region,
    startUnixMillis,
    endUnixMillis,
    ended: true,
    description,
  };
}
