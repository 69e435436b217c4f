import type { NodeActivity } from './attempt.ts';
import type { ResourceView } from './compiled-mapping.ts';

/**
 * Counts SERVER spans per (placement, time bucket) within one extracted batch. Resources with equal
 * placements (one process sends many payloads) merge into one `NodeActivity`; the detector adds
 * batches together.
 */
export interface ActivityCounter {
  count(view: ResourceView, startUnixMillis: number, error: boolean): void;
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
    count(view, startUnixMillis, error) {
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
    },
  };
}
