import {
  BASELINE_BUCKETS,
  bucketsOf,
  type FinderScope,
  type NodeActivitySeries,
  type ServiceActivity,
} from './activity-series.ts';
import { FoundEvents } from './found-events.ts';
import type { RoutingEvent } from './routing-event.ts';
import { nodeDownEvent } from './routing-event-builders.ts';

/**
 * A node's silences (`node_down`): gaps between its active buckets of at least `silenceMinMillis`
 * while the rest of its service kept serving, in which it should have served at least
 * `silenceMinExpectedSpans` at its share of the service's spans over the BASELINE_BUCKETS before.
 *
 * Silences are the gaps between a node's active buckets, and their cost is the buckets that hold
 * data, never the gap's length: the service's traffic during a gap comes from running sums over
 * its active buckets (two spans at times 0 and 2^53 ms are two buckets, not 2^43).
 *
 * Keeps what it found below the edge it was last asked up to, so that `find` reads again only the
 * buckets from where activity changed (see `RoutingInference`); a new instance with `from` of -∞
 * reads the whole window.
 */
export class NodeDownFinder {
  /**
   * The active buckets followed by a gap of a silence's length or more, ascending: the only ones a
   * silence can follow, so what pruning reads again when the baseline they count from moves.
   */
  private readonly longGaps: number[] = [];
  /** Silences, each at the active bucket it follows. */
  private readonly downs = new FoundEvents();

  constructor(
    private readonly scope: FinderScope,
    private readonly service: ServiceActivity,
    private readonly node: NodeActivitySeries,
  ) {}

  get events(): readonly RoutingEvent[] {
    return this.downs.events;
  }

  /**
   * Finds the silences in the node's buckets below `closedIndex`, keeping those found before
   * index `from`: a gap is re-read from the last active bucket below `from`, since one open across
   * `from` may have closed, grown or been split.
   */
  find(from: number, closedIndex: number): void {
    const buckets = this.node.buckets;
    const closedEnd = buckets.lowerBound(closedIndex);
    const longGaps = this.longGaps;
    if (closedEnd === 0) {
      longGaps.length = 0;
      this.downs.clear();
      return;
    }
    const first = Math.max(0, buckets.lowerBound(from) - 1);
    const firstIndex = buckets.indexAt(first);
    while (longGaps.length > 0 && longGaps[longGaps.length - 1]! >= firstIndex) longGaps.pop();
    this.downs.dropFrom(firstIndex);
    const minBuckets = bucketsOf(this.scope, this.scope.config.silenceMinMillis);
    const lastClosed = closedIndex - 1;
    for (let at = first; at < closedEnd; at++) {
      this.scope.bucketReads++;
      const lastActive = buckets.indexAt(at);
      const nextActive = at + 1 < closedEnd ? buckets.indexAt(at + 1) : lastClosed + 1;
      if (nextActive - lastActive - 1 < minBuckets) continue;
      longGaps.push(lastActive);
      const event = this.silenceAfter(at, closedEnd, lastClosed);
      if (event !== undefined) this.downs.push(lastActive, event);
    }
  }

  /**
   * After the node's oldest buckets were dropped: finds again, below `closedIndex` (the edge
   * `find` was last asked up to), the silences whose baseline reached before its oldest bucket
   * kept (the baseline starts at a node's first bucket).
   */
  findFrontAgain(closedIndex: number): void {
    const buckets = this.node.buckets;
    const closedEnd = buckets.lowerBound(closedIndex);
    const oldest = buckets.indexAt(0);
    const silencesReach = oldest + BASELINE_BUCKETS - 1;
    const longGaps = this.longGaps;
    let reached = 0;
    while (reached < longGaps.length && longGaps[reached]! < silencesReach) reached++;
    const kept: number[] = [];
    const downs = new FoundEvents();
    for (let g = 0; g < reached; g++) {
      const index = longGaps[g]!;
      // A gap after a dropped bucket is gone; the others are as long as they were.
      if (index < oldest) continue;
      kept.push(index);
      this.scope.bucketReads++;
      const event = this.silenceAfter(buckets.lowerBound(index), closedEnd, closedIndex - 1);
      if (event !== undefined) downs.push(index, event);
    }
    longGaps.splice(0, reached, ...kept);
    this.downs.replaceBelow(silencesReach, downs);
  }

  /** The silence after the node's active bucket at `position`, if it is one. */
  private silenceAfter(position: number, closedEnd: number, lastClosed: number): RoutingEvent | undefined {
    const { config } = this.scope;
    const totals = this.service.totals;
    const buckets = this.node.buckets;
    const minBuckets = bucketsOf(this.scope, config.silenceMinMillis);
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
    if (expected < config.silenceMinExpectedSpans) return undefined;
    const bucketMillis = this.scope.bucketMillis;
    return nodeDownEvent(
      this.node.placement,
      (lastActive + 1) * bucketMillis,
      nextActive * bucketMillis,
      nextActive <= lastClosed,
    );
  }
}
