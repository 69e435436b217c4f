import type { Placement } from '@keyscope/attempts';
import type { DetectorConfig } from '../config.ts';
import type { ActiveBuckets, InferenceWork } from './active-buckets.ts';

/** Buckets before a silence that give the node's baseline rate (or before a slowdown, its latency). */
export const BASELINE_BUCKETS = 30;

/** A service's activity, all its nodes together, as the finders read it. */
export interface ServiceActivity {
  /** Spans of all nodes per bucket. */
  readonly totals: ActiveBuckets;
  /** Duration histograms of all nodes, by bucket index. */
  readonly latencyTotals: LatencyHistograms;
  /**
   * Bucket index → how many latency samples of any node it took: a bucket's version, which a
   * node's cached latency verdicts are checked against (see slowdowns.ts).
   */
  readonly latencyVersions: { get(index: number): number | undefined };
}

/** One node's activity, as the finders read it. */
export interface NodeActivitySeries {
  readonly placement: Placement;
  readonly buckets: ActiveBuckets;
  /** Duration histograms (`NodeActivity.latency`) by bucket index, for buckets whose samples had one. */
  readonly latency: LatencyHistograms;
}

/**
 * Duration histograms by bucket index, read by adding them into a histogram of the reader's
 * (`emptyLatency`), so that a verdict over many buckets allocates nothing per bucket.
 */
export interface LatencyHistograms {
  /** Buckets with a histogram. */
  readonly size: number;
  has(index: number): boolean;
  /** Adds bucket `index`'s histogram, times `sign` (1 or -1), into `into`; false, adding nothing, if it has none. */
  addTo(index: number, into: number[], sign?: number): boolean;
}

/** What every finder reads besides activity, and where it counts what inference costs. */
export interface FinderScope extends InferenceWork {
  readonly config: DetectorConfig;
  /** What a bucket index counts: every finder's thresholds in milliseconds are read in buckets of it. */
  readonly bucketMillis: number;
  /** Buckets whose latency was judged against the node's peers, ever. */
  latencyJudgements: number;
}

/** A threshold in milliseconds as whole buckets, at least one. */
export function bucketsOf(scope: FinderScope, millis: number): number {
  return Math.max(1, Math.ceil(millis / scope.bucketMillis));
}
