import type { NodeActivity } from './attempt.ts';
import type { ResourceView } from './compiled-mapping.ts';
import { emptyLatency, latencyBucketOf } from './latency-histogram.ts';

/**
 * Counts SERVER spans, their errors and their durations per (placement, time bucket) within one extracted batch. Resources with equal
 * placements (one process sends many payloads) merge into one `NodeActivity`; the detector adds
 * batches together.
 */
export interface ActivityCounter {
  /** One SERVER span: its start picks the bucket, its duration the latency histogram's bucket. */
  count(view: ResourceView, startUnixMillis: number, endUnixMillis: number, error: boolean): void;
  /** Every bucket counted so far, in order of first appearance. */
  readonly activity: NodeActivity[];
}

export function createActivityCounter(bucketMillis: number): ActivityCounter {
  const activity: NodeActivity[] = [];
  const byPlacement = new Map<string, Map<number, NodeActivity>>();
  // Consecutive spans mostly share placement and bucket: skip both map lookups for them.
  let lastView: ResourceView | undefined;
  let lastBucket = Number.NaN;
  let last: NodeActivity | undefined;
  return {
    activity,
    count(view, startUnixMillis, endUnixMillis, error) {
      const bucket = Math.floor(startUnixMillis / bucketMillis) * bucketMillis;
      let entry: NodeActivity | undefined;
      if (view === lastView && bucket === lastBucket) {
        entry = last!;
      } else {
        let buckets = byPlacement.get(view.placementKey);
        if (buckets === undefined) {
          buckets = new Map();
          byPlacement.set(view.placementKey, buckets);
        }
        entry = buckets.get(bucket);
        if (entry === undefined) {
          entry = {
            placement: view.placement,
            bucketStartUnixMillis: bucket,
            bucketMillis,
            spans: 0,
            errors: 0,
            latency: emptyLatency(),
          };
          buckets.set(bucket, entry);
          activity.push(entry);
        }
        lastView = view;
        lastBucket = bucket;
        last = entry;
      }
      entry.spans++;
      if (error) entry.errors++;
      entry.latency![latencyBucketOf(endUnixMillis - startUnixMillis)]!++;
    },
  };
}
