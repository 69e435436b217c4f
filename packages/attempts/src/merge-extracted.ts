import type { Attempt, ExtractedAttempts, KeylessSend, NodeActivity, Placement } from './attempt.ts';
import { addLatency, emptyLatency } from './latency-histogram.ts';

/**
 * Several extracted batches as one, as if their spans had come in one payload: the attempts (and
 * keyless sends) in order, the node activity of one placement and bucket summed into one sample (latency histograms too) (placements compared
 * by identity: extraction gives every span of a resource the same placement object, and the
 * decoders give equal resources the same object), the invalid values added up. The batches are
 * only read; a single batch is returned as it is.
 */
export function mergeExtracted(batches: readonly ExtractedAttempts[]): ExtractedAttempts {
  if (batches.length === 1) return batches[0]!;
  const attempts: Attempt[] = [];
  const keylessSends: KeylessSend[] = [];
  const activity: NodeActivity[] = [];
  const invalid = { outcome: 0, hit: 0, scope: 0 };
  const byPlacement = new Map<Placement, Map<number, NodeActivity>>();
  for (const batch of batches) {
    for (const attempt of batch.attempts) attempts.push(attempt);
    for (const send of batch.keylessSends ?? []) keylessSends.push(send);
    for (const sample of batch.activity) {
      let buckets = byPlacement.get(sample.placement);
      if (buckets === undefined) {
        buckets = new Map();
        byPlacement.set(sample.placement, buckets);
      }
      const known = buckets.get(sample.bucketStartUnixMillis);
      if (known === undefined || known.bucketMillis !== sample.bucketMillis) {
        const copy = { ...sample };
        if (sample.latency !== undefined) copy.latency = [...sample.latency];
        if (known === undefined) buckets.set(sample.bucketStartUnixMillis, copy);
        activity.push(copy);
      } else {
        known.spans += sample.spans;
        known.errors += sample.errors;
        if (sample.latency !== undefined) {
          if (known.latency === undefined) known.latency = emptyLatency();
          addLatency(known.latency, sample.latency);
        }
      }
    }
    invalid.outcome += batch.invalid.outcome;
    invalid.hit += batch.invalid.hit;
    invalid.scope += batch.invalid.scope;
  }
  return { attempts, activity, invalid, keylessSends };
}
