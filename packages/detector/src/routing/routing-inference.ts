import { addLatency, emptyLatency, type NodeActivity, type Placement } from '@keyscope/attempts';
import type { DetectorConfig } from '../config.ts';
import { stableId } from '../ids.ts';
import { ActiveBuckets, type InferenceWork } from './active-buckets.ts';
import type { RoutingEvent } from './routing-event.ts';
import { shareFrom, slowdownDescription, slowerThan, slowShareOf, spansPast } from './slow-share.ts';

/** How much activity is kept to infer events from; older events are frozen as they were. */
export const ACTIVITY_WINDOW_MILLIS = 2 * 60 * 60 * 1000;
/** Buckets before a silence that give the node's baseline rate (or before a slowdown, its latency). */
export const BASELINE_BUCKETS = 30;
/**
 * Slow buckets this close are one brownout: a few seconds back under the threshold do not split it
 * (a busy node queues requests, and spans that start late end at the caller's timeout sooner).
 */
export const SLOW_RUN_MAX_STEP = 4;
/**
 * Buckets of the node's other nodes, ending at the bucket judged, that its spans are compared
 * with: ten seconds of a few peers are a hundred spans or more, so how often they rarely take
 * long is read from enough of them (one second of one peer at ~10 spans/s says little).
 */
export const SLOW_PEER_BUCKETS = 10;
/** Buckets of the node itself, ending at the bucket judged: a brownout second, or a slow pair. */
export const SLOW_OWN_BUCKETS = 2;
/** Every bucket whose histogram a bucket's verdict reads, back from it. */
const SLOW_WINDOW_BUCKETS = Math.max(SLOW_PEER_BUCKETS, SLOW_OWN_BUCKETS);
/**
 * How many times as often as its peers a node's spans must last past the bound they rarely reach
 * for one second to be slow. Lower than `latencySpikeRatio`, which the whole run must meet: a
 * brownout's seconds are noisy one by one, a healthy node's slow seconds do not last.
 */
export const SLOW_SECOND_RATIO = 2;
/**
 * How many times as often as in its own BASELINE_BUCKETS before a run's spans must last past the
 * bound for the run to be a spike: enough to tell a node that slowed from one always slower; lower
 * than against its peers, since a loaded node's past already holds some of what slowed it.
 */
export const SLOW_PAST_RATIO = 2;
/**
 * How far past chance a run's slow spans must be, in standard deviations of the count its peers'
 * (or its past's) share expects: a healthy node's seconds picked for being slow are a few
 * deviations out, one in some thousands of runs; a brownout's are tens.
 */
export const SLOW_RUN_SIGMAS = 5;

interface NodeSeries {
  placement: Placement;
  buckets: ActiveBuckets;
  /** Bucket index → duration histogram (`NodeActivity.latency`), for buckets whose samples had one. */
  latency: Map<number, number[]>;
  /**
   * Whether the node was slow against its peers in a bucket, as of that bucket's version in
   * `ServiceSeries.latencyVersions`: a bucket nobody's activity touched since is not judged again.
   */
  slowness: Map<number, { version: number; slow: boolean }>;
  // What inference found in the node's buckets below `ServiceSeries.inferredClosedIndex`, kept so
  // that the next inference reads only the buckets that can change it (see `RoutingInference.infer`).
  /**
   * The active buckets followed by a gap of a silence's length or more, ascending: the only ones a
   * silence can follow, so what pruning reads again when the baseline they count from moves.
   */
  longGaps: number[];
  /** Silences, each at the active bucket it follows. */
  downs: FoundEvents;
  /** Runs of error-spiking buckets, [first, last], short ones included: a run can still grow. */
  errorRuns: [number, number][];
  /** Error spikes, each at its run's first bucket. */
  errorSpikes: FoundEvents;
  /** Runs of slow buckets, short ones included. */
  slowRuns: SlowRun[];
  /** Latency spikes, each at its run's first bucket. */
  slowdowns: FoundEvents;
}

interface SlowRun {
  first: number;
  last: number;
  /** Kept for the newest run only, which may still grow; recomputed from the buckets when absent. */
  latency?: RunLatency;
}

/** The histograms a latency spike is judged on, over a run's buckets from its first to its last. */
interface RunLatency {
  during: number[];
  /** The service's other nodes over the same buckets. */
  peers: number[];
  /** The node over the BASELINE_BUCKETS before the run's first. */
  before?: number[];
}

interface ServiceSeries {
  nodes: Map<string, NodeSeries>;
  /** Spans of all nodes per bucket. */
  totals: ActiveBuckets;
  /** Bucket index → duration histogram of all nodes. */
  latencyTotals: Map<number, number[]>;
  /** Bucket index → how many latency samples of any node it took: what `NodeSeries.slowness` checks. */
  latencyVersions: Map<number, number>;
  /** Counts of a bucket the cached events were inferred from changed (late activity). */
  dirty: boolean;
  /**
   * The earliest bucket below `inferredClosedIndex` whose counts changed since the last inference
   * (late activity): what the node caches were inferred from holds below it. +∞ if none.
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
 */
export class RoutingInference implements InferenceWork {
  private readonly services = new Map<string, ServiceSeries>();
  private readonly frozen = new Map<string, RoutingEvent>();
  /** Ids of frozen events `prune` forgot past the retry horizon since `takeExpired` last took them. */
  private expired: string[] = [];
  private bucketMillis = 1000;
  /** End of the newest bucket seen. */
  private newestUnixMillis = Number.NEGATIVE_INFINITY;
  /** Activity before this is final (monotone); see the class comment. */
  private closedUnixMillis = Number.NEGATIVE_INFINITY;
  /** The newest activity's end as `advanceClock` last saw it, and the clock when it first did. */
  private newestAsOf = { newestUnixMillis: Number.NEGATIVE_INFINITY, clockUnixMillis: 0 };
  /** Buckets whose latency was judged against the node's peers, ever. */
  latencyJudgements = 0;
  /** Buckets inference (and its running sums) read, ever: what inference costs. */
  bucketReads = 0;

  constructor(private readonly config: DetectorConfig) {}

  record(activity: readonly NodeActivity[]): void {
    for (const sample of activity) {
      if (sample.bucketMillis !== this.bucketMillis) {
        // Every bucket index means another time now: what was found is read again in full.
        this.bucketMillis = sample.bucketMillis;
        for (const series of this.services.values()) series.changedFrom = Number.NEGATIVE_INFINITY;
      }
      const placement = sample.placement;
      let service = this.services.get(placement.service);
      if (service === undefined) {
        service = {
          nodes: new Map(),
          totals: new ActiveBuckets(this),
          latencyTotals: new Map(),
          latencyVersions: new Map(),
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
        node = {
          placement,
          buckets: new ActiveBuckets(this),
          latency: new Map(),
          slowness: new Map(),
          longGaps: [],
          downs: new FoundEvents(),
          errorRuns: [],
          errorSpikes: new FoundEvents(),
          slowRuns: [],
          slowdowns: new FoundEvents(),
        };
        service.nodes.set(nodeKey, node);
      }
      const index = Math.floor(sample.bucketStartUnixMillis / sample.bucketMillis);
      node.buckets.add(index, sample.spans, sample.errors);
      service.totals.add(index, sample.spans, sample.errors);
      if (sample.latency !== undefined) {
        addLatency(histogramAt(node.latency, index), sample.latency);
        addLatency(histogramAt(service.latencyTotals, index), sample.latency);
        service.latencyVersions.set(index, (service.latencyVersions.get(index) ?? 0) + 1);
      }
      // A bucket beyond what was inferred changes nothing until the watermark passes it.
      if (index < service.inferredClosedIndex) {
        service.dirty = true;
        if (index < service.changedFrom) service.changedFrom = index;
      }
      const end = sample.bucketStartUnixMillis + sample.bucketMillis;
      if (end > this.newestUnixMillis) this.newestUnixMillis = end;
    }
    this.close(this.newestUnixMillis - this.config.allowedLatenessMillis);
  }

  /**
   * Closes what the clock says is final: every second `allowedLatenessMillis` before `nowUnixMillis`
   * that activity has arrived up to, or that has passed since the newest activity arrived (the
   * clock of the first call that saw it; less the lateness if it arrived later than that). In a
   * live service `now` is the wall clock: while traffic flows the closed edge follows it, lateness
   * behind; when traffic stops it goes on with it, so an incident of the last duplicate before the
   * silence settles; and while spans older than the lateness are read (a backlog after a restart)
   * it stays at the newest activity read, through pauses shorter than the lateness, so what
   * settles was judged on activity that arrived, not on seconds still to be read.
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

  /** Activity before this time is final; past the newest activity, when the input was quiet. */
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
   * moved on by a silence's worth of buckets: a key judged on slightly older events is judged again
   * if they change, since `all()`, which `tick`/`flush` use to re-group findings, catches them.
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
      // Every node's bucket is one of the service's: nothing of the service is old, none of a node.
      if (series.totals.size === 0 || series.totals.indexAt(0) >= cutoffIndex) continue;
      series.totals.dropBelow(cutoffIndex, (index) => {
        series.latencyTotals.delete(index);
        series.latencyVersions.delete(index);
      });
      for (const [key, node] of series.nodes) {
        const dropped = node.buckets.dropBelow(cutoffIndex, (index) => {
          node.latency.delete(index);
          node.slowness.delete(index);
        });
        // The verdicts whose window reached below the cutoff read less now, the node's or its peers'.
        for (let index = cutoffIndex; index < cutoffIndex + SLOW_WINDOW_BUCKETS - 1; index++)
          node.slowness.delete(index);
        if (node.buckets.size === 0) {
          series.nodes.delete(key);
          continue;
        }
        // Unless the node is read again in full anyway (`record`), what it found is kept in step.
        if (series.changedFrom === Number.NEGATIVE_INFINITY) continue;
        if (dropped > 0) this.inferFront(name, series, node, cutoffIndex);
        this.inferSlowFront(name, series, node, cutoffIndex);
      }
      series.dirty = true;
    }
    const horizon = this.newestUnixMillis - this.config.retryHorizonMillis;
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
      series.changedFrom = Number.POSITIVE_INFINITY;
      series.inferredClosedIndex = closedIndex;
    }
    return series.events;
  }

  /**
   * The service's events in its buckets below `closedIndex`; a new event type adds its finder here.
   * What each node's buckets below `from` gave is kept as found: only the buckets from there on,
   * and what a finding there looks back at, are read.
   */
  private infer(service: string, series: ServiceSeries, closedIndex: number): RoutingEvent[] {
    // Buckets below the last inference's closed index and the earliest change are as they were.
    const from = Math.min(series.changedFrom, series.inferredClosedIndex);
    const downs: RoutingEvent[] = [];
    const spikes: RoutingEvent[] = [];
    // Summed as they close, each bucket once, rather than all at once when a silence first needs them.
    series.totals.sumBelow(closedIndex);
    for (const node of series.nodes.values()) {
      node.buckets.sumBelow(closedIndex);
      this.findSilences(service, series, node, from, closedIndex);
      this.findSpikes(service, node, from, closedIndex);
      this.findSlowdowns(service, series, node, from, closedIndex);
      for (const event of node.downs.events) downs.push(event);
      for (const event of node.errorSpikes.events) spikes.push(event);
      for (const event of node.slowdowns.events) spikes.push(event);
    }
    return [...this.composeFailovers(service, series, downs), ...spikes].sort(compareEvents);
  }

  /**
   * After the node's buckets below `cutoff` were dropped: re-infers, in its buckets below the
   * inferred closed index, what the dropped ones bore on — the silences whose baseline reached
   * before its oldest bucket kept (the baseline starts at a node's first bucket), the runs that
   * began before `cutoff`, and the slowdowns whose baseline reached before it.
   */
  private inferFront(service: string, series: ServiceSeries, node: NodeSeries, cutoff: number): void {
    const buckets = node.buckets;
    const closedIndex = series.inferredClosedIndex;
    const closedEnd = buckets.lowerBound(closedIndex);

    const oldest = buckets.indexAt(0);
    const silencesReach = oldest + BASELINE_BUCKETS - 1;
    const longGaps = node.longGaps;
    const reached = countWhile(longGaps, (index) => index < silencesReach);
    const kept: number[] = [];
    const downs = new FoundEvents();
    for (const index of longGaps.slice(0, reached)) {
      // A gap after a dropped bucket is gone; the others are as long as they were.
      if (index < oldest) continue;
      kept.push(index);
      this.bucketReads++;
      const at = buckets.lowerBound(index);
      const event = this.silenceAfter(service, series.totals, node, at, closedEnd, closedIndex - 1);
      if (event !== undefined) downs.push(index, event);
    }
    longGaps.splice(0, reached, ...kept);
    node.downs.replaceBelow(silencesReach, downs);

    const errorRuns = node.errorRuns;
    errorRuns.splice(
      0,
      countWhile(errorRuns, ([, last]) => last < cutoff),
    );
    const errorSpikes = new FoundEvents();
    const firstErrorRun = errorRuns[0];
    if (firstErrorRun !== undefined && firstErrorRun[0] < cutoff) {
      // Its last bucket is kept, so one of its spiking buckets is.
      let at = 0;
      while (!this.spiking(buckets, at)) at++;
      firstErrorRun[0] = buckets.indexAt(at);
      const event = this.errorSpikeOf(service, node, firstErrorRun);
      if (event !== undefined) errorSpikes.push(firstErrorRun[0], event);
    }
    node.errorSpikes.replaceBelow(cutoff, errorSpikes);
  }

  /**
   * After any node's buckets below `cutoff` were dropped: re-infers the node's slow runs that the
   * dropped buckets bore on — those whose verdicts read a window reaching below `cutoff`, those a
   * changed verdict can join or split (within SLOW_RUN_MAX_STEP), and the latency spikes whose
   * baseline reached before `cutoff`.
   */
  private inferSlowFront(service: string, series: ServiceSeries, node: NodeSeries, cutoff: number): void {
    const buckets = node.buckets;
    const runs = node.slowRuns;
    runs.splice(
      0,
      countWhile(runs, (run) => run.last < cutoff),
    );
    // Verdicts below `changed` read a window the cutoff cut; the others are as they were.
    const changed = cutoff + SLOW_WINDOW_BUCKETS - 1;
    const affected = countWhile(runs, (run) => run.first <= changed + SLOW_RUN_MAX_STEP);
    // A run found again ends by the last affected run's end, or a changed verdict: more than
    // SLOW_RUN_MAX_STEP before the first run kept, which is left as it was.
    const scanTo = Math.max(changed - 1, affected > 0 ? runs[affected - 1]!.last : changed - 1);
    const closedEnd = buckets.lowerBound(series.inferredClosedIndex);
    const found: SlowRun[] = [];
    for (let at = buckets.lowerBound(cutoff); at < closedEnd && buckets.indexAt(at) <= scanTo; at++) {
      const index = buckets.indexAt(at);
      if (!this.slowAt(series, node, index)) continue;
      const last = found[found.length - 1];
      if (last !== undefined && index - last.last <= SLOW_RUN_MAX_STEP) last.last = index;
      else found.push({ first: index, last: index });
    }
    runs.splice(0, affected, ...found);
    const slowdownsReach = cutoff + BASELINE_BUCKETS;
    const slowdowns = new FoundEvents();
    for (const run of runs) {
      if (run.first >= slowdownsReach) break;
      if (run.latency !== undefined) delete run.latency.before;
      const event = this.slowdownOf(service, series, node, run);
      if (event !== undefined) slowdowns.push(run.first, event);
      if (run !== runs[runs.length - 1]) delete run.latency;
    }
    node.slowdowns.replaceBelow(slowdownsReach, slowdowns);
  }

  /**
   * Silences are the gaps between a node's active buckets, and their cost is the buckets that
   * hold data, never the gap's length: the service's traffic during a gap comes from running sums
   * over its active buckets (two spans at times 0 and 2^53 ms are two buckets, not 2^43). A gap
   * is re-read from the last active bucket below `from`: one open across `from` may have closed,
   * grown or been split.
   */
  private findSilences(
    service: string,
    series: ServiceSeries,
    node: NodeSeries,
    from: number,
    closedIndex: number,
  ): void {
    const buckets = node.buckets;
    const closedEnd = buckets.lowerBound(closedIndex);
    const longGaps = node.longGaps;
    if (closedEnd === 0) {
      longGaps.length = 0;
      node.downs.clear();
      return;
    }
    const first = Math.max(0, buckets.lowerBound(from) - 1);
    const firstIndex = buckets.indexAt(first);
    while (longGaps.length > 0 && longGaps[longGaps.length - 1]! >= firstIndex) longGaps.pop();
    node.downs.dropFrom(firstIndex);
    const minBuckets = Math.max(1, Math.ceil(this.config.silenceMinMillis / this.bucketMillis));
    const lastClosed = closedIndex - 1;
    for (let at = first; at < closedEnd; at++) {
      this.bucketReads++;
      const lastActive = buckets.indexAt(at);
      const nextActive = at + 1 < closedEnd ? buckets.indexAt(at + 1) : lastClosed + 1;
      if (nextActive - lastActive - 1 < minBuckets) continue;
      longGaps.push(lastActive);
      const event = this.silenceAfter(service, series.totals, node, at, closedEnd, lastClosed);
      if (event !== undefined) node.downs.push(lastActive, event);
    }
  }

  /** The silence after the node's active bucket at `position`, if it is one. */
  private silenceAfter(
    service: string,
    totals: ActiveBuckets,
    node: NodeSeries,
    position: number,
    closedEnd: number,
    lastClosed: number,
  ): RoutingEvent | undefined {
    const buckets = node.buckets;
    const minBuckets = Math.max(1, Math.ceil(this.config.silenceMinMillis / this.bucketMillis));
    const lastActive = buckets.indexAt(position);
    // A silence still open at the closed edge ends there, for now (`ended: false`).
    const nextActive = position + 1 < closedEnd ? buckets.indexAt(position + 1) : lastClosed + 1;
    if (nextActive - lastActive - 1 < minBuckets) return undefined;
    // A silence of the whole service is an outage or a lull, not traffic moving away from this
    // node: what counts is how much the node should have served at its usual share.
    const from = totals.upperBound(lastActive);
    const to = totals.lowerBound(nextActive);
    const servedElsewhere = totals.servingBetween(from, to);
    const serviceSpansDuring = totals.spansBetween(from, to);
    if (servedElsewhere < minBuckets) return undefined;
    const baselineFrom = Math.max(buckets.indexAt(0), lastActive + 1 - BASELINE_BUCKETS);
    const nodeSpans = buckets.spansBetween(buckets.lowerBound(baselineFrom), position + 1);
    const serviceSpans = totals.spansBetween(totals.lowerBound(baselineFrom), from);
    const expected = serviceSpans === 0 ? 0 : (nodeSpans / serviceSpans) * serviceSpansDuring;
    if (expected < this.config.silenceMinExpectedSpans) return undefined;
    const ended = nextActive <= lastClosed;
    const startUnixMillis = (lastActive + 1) * this.bucketMillis;
    const endUnixMillis = nextActive * this.bucketMillis;
    const p = node.placement;
    return {
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
    };
  }

  /**
   * Runs of spiking buckets; a run resumed within `minBuckets` is the same spike (one healthy
   * second inside an outage must not split it into two events and two pages). The runs found
   * below `from` are kept; the one reaching across it is cut back to its buckets below and
   * continued from there.
   */
  private findSpikes(service: string, node: NodeSeries, from: number, closedIndex: number): void {
    const minBuckets = Math.max(1, Math.ceil(this.config.errorSpikeMinMillis / this.bucketMillis));
    const buckets = node.buckets;
    const runs = node.errorRuns;
    while (runs.length > 0 && runs[runs.length - 1]![0] >= from) runs.pop();
    node.errorSpikes.dropFrom(from);
    let judgeFrom = runs.length;
    const open = runs[runs.length - 1];
    if (open !== undefined) {
      if (open[1] >= from) {
        // Its spiking buckets lie at most `minBuckets` apart, so this walks back that far at most.
        let at = buckets.lowerBound(from) - 1;
        while (!this.spiking(buckets, at)) at--;
        open[1] = buckets.indexAt(at);
      }
      if (from - open[1] <= minBuckets) {
        node.errorSpikes.dropFrom(open[0]);
        judgeFrom--;
      }
    }
    const closedEnd = buckets.lowerBound(closedIndex);
    for (let at = buckets.lowerBound(from); at < closedEnd; at++) {
      if (!this.spiking(buckets, at)) continue;
      const index = buckets.indexAt(at);
      const last = runs[runs.length - 1];
      if (last !== undefined && index - last[1] <= minBuckets) last[1] = index;
      else runs.push([index, index]);
    }
    for (let r = judgeFrom; r < runs.length; r++) {
      const event = this.errorSpikeOf(service, node, runs[r]!);
      if (event !== undefined) node.errorSpikes.push(runs[r]![0], event);
    }
  }

  private spiking(buckets: ActiveBuckets, position: number): boolean {
    this.bucketReads++;
    const spans = buckets.spansAt(position);
    return !(
      spans < this.config.errorSpikeMinSpans ||
      buckets.errorsAt(position) / spans < this.config.errorSpikeRatio
    );
  }

  private errorSpikeOf(
    service: string,
    node: NodeSeries,
    [first, last]: [number, number],
  ): RoutingEvent | undefined {
    const minBuckets = Math.max(1, Math.ceil(this.config.errorSpikeMinMillis / this.bucketMillis));
    if (last - first + 1 < minBuckets) return undefined;
    const startUnixMillis = first * this.bucketMillis;
    const endUnixMillis = (last + 1) * this.bucketMillis;
    const p = node.placement;
    return spikeEvent(
      'error_spike',
      service,
      p,
      startUnixMillis,
      endUnixMillis,
      `${service} node ${p.node} failed ${Math.round(
        this.config.errorSpikeRatio * 100,
      )}% or more of its server spans for ${formatSeconds(endUnixMillis - startUnixMillis)}`,
    );
  }

  /**
   * Brownouts: runs of buckets where the node was slow against its other nodes (`slowerThan`: the
   * share of its spans past its own median's bound at least `latencySpikeRatio` times theirs; a
   * run may skip one bucket: a single second back under the threshold does not split a brownout),
   * at least `latencySpikeMinMillis` long, and over the whole run slower that way than both its
   * other nodes over the same seconds and its own BASELINE_BUCKETS before. Comparing with the
   * other nodes is what tells a node that slowed from a service that did (a slow database slows
   * every node, and moves no retry); comparing with its own past keeps a node that is always
   * slower (a smaller instance) from being one long event. Runs are kept and continued like error
   * spikes; the newest keeps its histograms' sums, so a brownout that goes on costs its new
   * buckets, not its length.
   */
  private findSlowdowns(
    service: string,
    series: ServiceSeries,
    node: NodeSeries,
    from: number,
    closedIndex: number,
  ): void {
    const runs = node.slowRuns;
    if (node.latency.size === 0) {
      runs.length = 0;
      node.slowdowns.clear();
      return;
    }
    const buckets = node.buckets;
    while (runs.length > 0 && runs[runs.length - 1]!.first >= from) runs.pop();
    node.slowdowns.dropFrom(from);
    let judgeFrom = runs.length;
    const open = runs[runs.length - 1];
    if (open !== undefined) {
      if (open.last >= from) {
        let at = buckets.lowerBound(from) - 1;
        while (!this.slowAt(series, node, buckets.indexAt(at))) at--;
        open.last = buckets.indexAt(at);
        delete open.latency;
      }
      if (from - open.last <= SLOW_RUN_MAX_STEP) {
        node.slowdowns.dropFrom(open.first);
        judgeFrom--;
      }
    }
    const closedEnd = buckets.lowerBound(closedIndex);
    for (let at = buckets.lowerBound(from); at < closedEnd; at++) {
      const index = buckets.indexAt(at);
      if (!this.slowAt(series, node, index)) continue;
      const last = runs[runs.length - 1];
      if (last !== undefined && index - last.last <= SLOW_RUN_MAX_STEP) {
        // It grows by this bucket and the ones it skipped (never slow, so never a run's).
        if (last.latency !== undefined) {
          for (let back = at; buckets.indexAt(back) > last.last; back--)
            this.addRunBucket(series, node, last.latency, buckets.indexAt(back));
        }
        last.last = index;
      } else {
        const latency = { during: emptyLatency(), peers: emptyLatency() };
        this.addRunBucket(series, node, latency, index);
        runs.push({ first: index, last: index, latency });
      }
    }
    for (let r = judgeFrom; r < runs.length; r++) {
      const event = this.slowdownOf(service, series, node, runs[r]!);
      if (event !== undefined) node.slowdowns.push(runs[r]!.first, event);
    }
    // Only the newest run can grow: the others' sums would only hold memory.
    for (let r = Math.max(0, judgeFrom - 1); r < runs.length - 1; r++) delete runs[r]!.latency;
  }

  /**
   * Whether the node was slow against its peers in bucket `index` (`slowerThan` at
   * SLOW_SECOND_RATIO, its SLOW_OWN_BUCKETS against their SLOW_PEER_BUCKETS, both ending at
   * `index`); false for one without latency.
   */
  private slowAt(series: ServiceSeries, node: NodeSeries, index: number): boolean {
    const own = node.latency.get(index);
    if (own === undefined) return false;
    this.bucketReads++;
    // A bucket's verdict depends on the histograms of its window only: kept until any node's
    // activity changes one of them (versions only grow, so their sum changes when one does; pruning
    // drops the verdicts whose window it cut).
    let version = 0;
    for (let back = 0; back < SLOW_WINDOW_BUCKETS; back++)
      version += series.latencyVersions.get(index - back) ?? 0;
    let judged = node.slowness.get(index);
    if (judged === undefined || judged.version !== version) {
      const minSpans = this.config.latencySpikeMinSpans;
      const mine = emptyLatency();
      const peers = emptyLatency();
      for (let back = 0; back < SLOW_WINDOW_BUCKETS; back++) {
        const all = series.latencyTotals.get(index - back);
        if (all === undefined) continue;
        const ownThen = node.latency.get(index - back);
        if (back < SLOW_OWN_BUCKETS && ownThen !== undefined) addLatency(mine, ownThen);
        if (back < SLOW_PEER_BUCKETS) addPeers(peers, all, ownThen);
      }
      const slow =
        total(mine) >= minSpans &&
        total(peers) >= minSpans &&
        slowerThan(mine, peers, { ratio: SLOW_SECOND_RATIO, minSpans, sigmas: 0 });
      judged = { version, slow };
      node.slowness.set(index, judged);
      this.latencyJudgements++;
    }
    return judged.slow;
  }

  /** Adds bucket `index` (if it has latency) to a run's histograms. */
  private addRunBucket(series: ServiceSeries, node: NodeSeries, latency: RunLatency, index: number): void {
    const own = node.latency.get(index);
    if (own === undefined) return;
    this.bucketReads++;
    addLatency(latency.during, own);
    addPeers(latency.peers, series.latencyTotals.get(index)!, own);
  }

  /** The latency spike a run of slow buckets is, if it is one. */
  private slowdownOf(
    service: string,
    series: ServiceSeries,
    node: NodeSeries,
    run: SlowRun,
  ): RoutingEvent | undefined {
    const { latencySpikeRatio: ratio, latencySpikeMinSpans: minSpans } = this.config;
    const minBuckets = Math.max(1, Math.ceil(this.config.latencySpikeMinMillis / this.bucketMillis));
    const { first } = run;
    if (run.last - first + 1 < minBuckets) return undefined;
    const buckets = node.buckets;
    if (run.latency === undefined) {
      const latency: RunLatency = { during: emptyLatency(), peers: emptyLatency() };
      for (let at = buckets.lowerBound(first); at < buckets.size && buckets.indexAt(at) <= run.last; at++)
        this.addRunBucket(series, node, latency, buckets.indexAt(at));
      run.latency = latency;
    }
    if (run.latency.before === undefined) {
      const before = emptyLatency();
      for (let at = buckets.lowerBound(first - BASELINE_BUCKETS); buckets.indexAt(at) < first; at++) {
        const own = node.latency.get(buckets.indexAt(at));
        if (own === undefined) continue;
        this.bucketReads++;
        addLatency(before, own);
      }
      run.latency.before = before;
    }
    const before = run.latency.before;
    let { during, peers } = run.latency;
    let last = run.last;
    // A second's verdict reads the one before it too (SLOW_OWN_BUCKETS): a run's last second with
    // no span of its own past the bound was slow for the one before only, the brownout's first
    // healthy second, and is no part of the event.
    const lastOwn = node.latency.get(last)!;
    const bound = slowShareOf(during, peers);
    if (bound !== undefined && spansPast(lastOwn, bound.boundMillis) === 0) {
      if (last - 1 - first + 1 < minBuckets) return undefined;
      during = during.map((count, i) => count - lastOwn[i]!);
      const all = series.latencyTotals.get(last)!;
      peers = peers.map((count, i) => count - (all[i]! - lastOwn[i]!));
      last--;
    }
    if (total(before) < minSpans || total(peers) < minSpans) return undefined;
    const sigmas = SLOW_RUN_SIGMAS;
    if (
      !slowerThan(during, peers, { ratio, minSpans, sigmas }) ||
      !slowerThan(during, before, { ratio: SLOW_PAST_RATIO, minSpans, sigmas })
    )
      return undefined;
    const slow = slowShareOf(during, peers)!;
    const startUnixMillis = first * this.bucketMillis;
    const endUnixMillis = (last + 1) * this.bucketMillis;
    return spikeEvent(
      'latency_spike',
      service,
      node.placement,
      startUnixMillis,
      endUnixMillis,
      slowdownDescription(service, node.placement.node, {
        startUnixMillis,
        endUnixMillis,
        baselineMillis: BASELINE_BUCKETS * this.bucketMillis,
        peers: slow,
        pastShare: shareFrom(before, slow.boundMillis),
      }),
    );
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

export function compareEvents(a: RoutingEvent, b: RoutingEvent): number {
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

/** Events a finder found, in the order of the buckets they are anchored at (ascending). */
class FoundEvents {
  private anchors: number[] = [];
  private found: RoutingEvent[] = [];

  get events(): readonly RoutingEvent[] {
    return this.found;
  }

  /** Adds an event anchored after every one held. */
  push(anchor: number, event: RoutingEvent): void {
    this.anchors.push(anchor);
    this.found.push(event);
  }

  /** Drops the events anchored at `anchor` or later. */
  dropFrom(anchor: number): void {
    while (this.anchors.length > 0 && this.anchors[this.anchors.length - 1]! >= anchor) {
      this.anchors.pop();
      this.found.pop();
    }
  }

  /** Replaces the events anchored before `anchor` by `front`'s, all anchored before it too. */
  replaceBelow(anchor: number, front: FoundEvents): void {
    const below = countWhile(this.anchors, (at) => at < anchor);
    this.anchors.splice(0, below, ...front.anchors);
    this.found.splice(0, below, ...front.found);
  }

  clear(): void {
    this.anchors.length = 0;
    this.found.length = 0;
  }
}

/** How many of `items`, from the first, satisfy `test`. */
function countWhile<T>(items: readonly T[], test: (item: T) => boolean): number {
  let count = 0;
  while (count < items.length && test(items[count]!)) count++;
  return count;
}

/** Adds a bucket's other nodes' histogram (the service's less the node's own, if any) into `into`. */
function addPeers(into: number[], all: readonly number[], own: readonly number[] | undefined): void {
  for (let i = 0; i < into.length; i++) into[i]! += all[i]! - (own?.[i] ?? 0);
}
