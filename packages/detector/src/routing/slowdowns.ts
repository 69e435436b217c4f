import { emptyLatency } from '@keyscope/attempts';
import {
  BASELINE_BUCKETS,
  bucketsOf,
  type FinderScope,
  type NodeActivitySeries,
  type ServiceActivity,
} from './activity-series.ts';
import { FoundEvents } from './found-events.ts';
import { NumberColumn } from './number-column.ts';
import type { RoutingEvent } from './routing-event.ts';
import { latencySpikeEvent } from './routing-event-builders.ts';
import { extendRuns, type Run, type RunCondition, reopenRuns } from './runs.ts';
import { shareFrom, slowerThan, slowShareOf, spansPast } from './slow-share.ts';

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
export const SLOW_WINDOW_BUCKETS = Math.max(SLOW_PEER_BUCKETS, SLOW_OWN_BUCKETS);
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

/**
 * The histograms one verdict of `slowAt` sums, reused: a verdict reads them and keeps none, and
 * verdicts are made one at a time.
 */
const SCRATCH_MINE = emptyLatency();
const SCRATCH_PEERS = emptyLatency();

interface SlowRun extends Run {
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

/**
 * A node's brownouts (`latency_spike`): runs of buckets where the node was slow against its other
 * nodes (`slowerThan`: the share of its spans past the bound they rarely reach at least
 * SLOW_SECOND_RATIO times theirs; a run may skip up to SLOW_RUN_MAX_STEP - 1 buckets: a few seconds
 * back under the threshold do not split a brownout), at least `latencySpikeMinMillis` long, and over
 * the whole run slower that way than both its other nodes over the same seconds
 * (`latencySpikeRatio`) and its own BASELINE_BUCKETS before (SLOW_PAST_RATIO). Comparing with the
 * other nodes is what tells a node that slowed from a service that did (a slow database slows
 * every node, and moves no retry); comparing with its own past keeps a node that is always slower
 * (a smaller instance) from being one long event.
 *
 * Keeps its runs, short ones included, and each bucket's verdict until activity in its window
 * changes, so that `find` reads again only the buckets from where activity changed (see
 * `RoutingInference`); the newest run keeps its histograms' sums, so a brownout that goes on costs
 * its new buckets, not its length. A new instance with `from` of -∞ reads the whole window, every
 * verdict afresh.
 */
export class SlowdownFinder {
  private readonly runs: SlowRun[] = [];
  /** Latency spikes, each at its run's first bucket. */
  private readonly slowdowns = new FoundEvents();
  /**
   * Whether the node was slow against its peers in a bucket, as of that bucket's window's version
   * (`ServiceActivity.latencyVersions`): a bucket nobody's activity touched since is not judged again.
   * One number per bucket, `2 × version + (slow ? 1 : 0)`: a bucket of every node has one.
   */
  private readonly slowness = new NumberColumn();
  /** Slow buckets as runs that sum their histograms as they grow: what `find` continues. */
  private readonly summed: RunCondition<SlowRun>;
  /** Slow buckets as bare runs, their sums read when judged: what pruning finds again. */
  private readonly bare: RunCondition<SlowRun>;

  constructor(
    private readonly scope: FinderScope,
    private readonly service: ServiceActivity,
    private readonly node: NodeActivitySeries,
  ) {
    const { buckets } = node;
    const holdsAt = (position: number) => this.slowAt(buckets.indexAt(position));
    this.summed = {
      holdsAt,
      start: (index) => {
        const latency = { during: emptyLatency(), peers: emptyLatency() };
        this.addRunBucket(latency, index);
        return { first: index, last: index, latency };
      },
      grow: (run, position) => {
        const latency = run.latency;
        if (latency === undefined) return;
        // It grows by this bucket and the ones it skipped (never slow, so never a run's).
        for (let back = position; buckets.indexAt(back) > run.last; back--)
          this.addRunBucket(latency, buckets.indexAt(back));
      },
      cutBack: (run) => {
        delete run.latency;
      },
    };
    this.bare = {
      holdsAt,
      start: (index) => ({ first: index, last: index }),
      grow() {},
      cutBack() {},
    };
  }

  get events(): readonly RoutingEvent[] {
    return this.slowdowns.events;
  }

  /**
   * Finds the latency spikes in the node's buckets below `closedIndex`. Runs are kept and
   * continued like error spikes: the ones below index `from` as they were, the one reaching across
   * it cut back to its buckets below and continued from there.
   */
  find(from: number, closedIndex: number): void {
    const runs = this.runs;
    if (this.node.latency.size === 0) {
      runs.length = 0;
      this.slowdowns.clear();
      return;
    }
    const buckets = this.node.buckets;
    const judgeFrom = reopenRuns(runs, buckets, from, SLOW_RUN_MAX_STEP, this.summed);
    this.slowdowns.dropFrom(judgeFrom < runs.length ? runs[judgeFrom]!.first : from);
    const closedEnd = buckets.lowerBound(closedIndex);
    extendRuns(runs, buckets, buckets.lowerBound(from), closedEnd, SLOW_RUN_MAX_STEP, this.summed);
    for (let r = judgeFrom; r < runs.length; r++) {
      const event = this.slowdownOf(runs[r]!);
      if (event !== undefined) this.slowdowns.push(runs[r]!.first, event);
    }
    // Only the newest run can grow: the others' sums would only hold memory.
    for (let r = Math.max(0, judgeFrom - 1); r < runs.length - 1; r++) delete runs[r]!.latency;
  }

  /**
   * After any node's buckets below `cutoff` were dropped: finds again, below `closedIndex` (the
   * edge `find` was last asked up to), the runs that the dropped buckets bore on — those whose
   * verdicts read a window reaching below `cutoff`, those a changed verdict can join or split
   * (within SLOW_RUN_MAX_STEP), and the latency spikes whose baseline reached before `cutoff`.
   */
  findFrontAgain(cutoff: number, closedIndex: number): void {
    const buckets = this.node.buckets;
    const runs = this.runs;
    let below = 0;
    while (below < runs.length && runs[below]!.last < cutoff) below++;
    runs.splice(0, below);
    // Verdicts below `changed` read a window the cutoff cut; the others are as they were.
    const changed = cutoff + SLOW_WINDOW_BUCKETS - 1;
    let affected = 0;
    while (affected < runs.length && runs[affected]!.first <= changed + SLOW_RUN_MAX_STEP) affected++;
    // A run found again ends by the last affected run's end, or a changed verdict: more than
    // SLOW_RUN_MAX_STEP before the first run kept, which is left as it was.
    const scanTo = Math.max(changed - 1, affected > 0 ? runs[affected - 1]!.last : changed - 1);
    const scanEnd = Math.min(buckets.lowerBound(closedIndex), buckets.upperBound(scanTo));
    const found: SlowRun[] = [];
    extendRuns(found, buckets, buckets.lowerBound(cutoff), scanEnd, SLOW_RUN_MAX_STEP, this.bare);
    runs.splice(0, affected, ...found);
    const slowdownsReach = cutoff + BASELINE_BUCKETS;
    const slowdowns = new FoundEvents();
    for (const run of runs) {
      if (run.first >= slowdownsReach) break;
      if (run.latency !== undefined) delete run.latency.before;
      const event = this.slowdownOf(run);
      if (event !== undefined) slowdowns.push(run.first, event);
      if (run !== runs[runs.length - 1]) delete run.latency;
    }
    this.slowdowns.replaceBelow(slowdownsReach, slowdowns);
  }

  /** Forgets the verdict of the node's bucket `index`, pruned. */
  forgetVerdict(index: number): void {
    this.slowness.delete(index);
  }

  /** Forgets the verdicts whose window reached below `cutoff`: with it pruned they read less, the node's or its peers'. */
  forgetVerdictsCutAt(cutoff: number): void {
    for (let index = cutoff; index < cutoff + SLOW_WINDOW_BUCKETS - 1; index++) this.slowness.delete(index);
  }

  /**
   * Whether the node was slow against its peers in bucket `index` (`slowerThan` at
   * SLOW_SECOND_RATIO, its SLOW_OWN_BUCKETS against their SLOW_PEER_BUCKETS, both ending at
   * `index`); false for one without latency.
   */
  private slowAt(index: number): boolean {
    const { node, service, scope } = this;
    if (!node.latency.has(index)) return false;
    scope.bucketReads++;
    // A bucket's verdict depends on the histograms of its window only: kept until any node's
    // activity changes one of them (versions only grow, so their sum changes when one does; pruning
    // drops the verdicts whose window it cut).
    let version = 0;
    for (let back = 0; back < SLOW_WINDOW_BUCKETS; back++)
      version += service.latencyVersions.get(index - back) ?? 0;
    const judged = this.slowness.get(index);
    if (judged !== undefined && Math.floor(judged / 2) === version) return judged % 2 === 1;
    const minSpans = scope.config.latencySpikeMinSpans;
    const mine = SCRATCH_MINE.fill(0);
    const peers = SCRATCH_PEERS.fill(0);
    for (let back = 0; back < SLOW_WINDOW_BUCKETS; back++) {
      const at = index - back;
      if (back < SLOW_OWN_BUCKETS) node.latency.addTo(at, mine);
      if (back < SLOW_PEER_BUCKETS) addPeers(peers, service, node, at);
    }
    const slow =
      total(mine) >= minSpans &&
      total(peers) >= minSpans &&
      slowerThan(mine, peers, { ratio: SLOW_SECOND_RATIO, minSpans, sigmas: 0 });
    this.slowness.set(index, 2 * version + (slow ? 1 : 0));
    scope.latencyJudgements++;
    return slow;
  }

  /** Adds bucket `index` (if it has latency) to a run's histograms. */
  private addRunBucket(latency: RunLatency, index: number): void {
    if (!this.node.latency.addTo(index, latency.during)) return;
    this.scope.bucketReads++;
    addPeers(latency.peers, this.service, this.node, index);
  }

  /** The latency spike a run of slow buckets is, if it is one. */
  private slowdownOf(run: SlowRun): RoutingEvent | undefined {
    const { scope, node, service } = this;
    const { latencySpikeRatio: ratio, latencySpikeMinSpans: minSpans } = scope.config;
    const minBuckets = bucketsOf(scope, scope.config.latencySpikeMinMillis);
    const { first } = run;
    if (run.last - first + 1 < minBuckets) return undefined;
    const buckets = node.buckets;
    if (run.latency === undefined) {
      const latency: RunLatency = { during: emptyLatency(), peers: emptyLatency() };
      for (let at = buckets.lowerBound(first); at < buckets.size && buckets.indexAt(at) <= run.last; at++)
        this.addRunBucket(latency, buckets.indexAt(at));
      run.latency = latency;
    }
    if (run.latency.before === undefined) {
      const before = emptyLatency();
      for (let at = buckets.lowerBound(first - BASELINE_BUCKETS); buckets.indexAt(at) < first; at++) {
        if (node.latency.addTo(buckets.indexAt(at), before)) scope.bucketReads++;
      }
      run.latency.before = before;
    }
    const before = run.latency.before;
    let { during, peers } = run.latency;
    let last = run.last;
    // A second's verdict reads the one before it too (SLOW_OWN_BUCKETS): a run's last second with
    // no span of its own past the bound was slow for the one before only, the brownout's first
    // healthy second, and is no part of the event.
    const lastOwn = emptyLatency();
    node.latency.addTo(last, lastOwn);
    const bound = slowShareOf(during, peers);
    if (bound !== undefined && spansPast(lastOwn, bound.boundMillis) === 0) {
      if (last - 1 - first + 1 < minBuckets) return undefined;
      during = during.map((count, i) => count - lastOwn[i]!);
      const lastPeers = emptyLatency();
      addPeers(lastPeers, service, node, last);
      peers = peers.map((count, i) => count - lastPeers[i]!);
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
    return latencySpikeEvent(node.placement, {
      startUnixMillis: first * scope.bucketMillis,
      endUnixMillis: (last + 1) * scope.bucketMillis,
      baselineMillis: BASELINE_BUCKETS * scope.bucketMillis,
      peers: slow,
      pastShare: shareFrom(before, slow.boundMillis),
    });
  }
}

function total(counts: readonly number[]): number {
  let sum = 0;
  for (const count of counts) sum += count;
  return sum;
}

/** Adds bucket `index`'s other nodes' histogram (the service's less the node's own, if any) into `into`. */
function addPeers(into: number[], service: ServiceActivity, node: NodeActivitySeries, index: number): void {
  if (service.latencyTotals.addTo(index, into)) node.latency.addTo(index, into, -1);
}
