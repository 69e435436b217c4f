/**
 * Durations of SERVER spans as a small fixed histogram, so that node activity carries latency and
 * stays counts: histograms of one node and second from many payloads add up bucket by bucket, in
 * any order, and a quantile read from the sum is the quantile of all of them.
 *
 * Bucket i counts spans shorter than `LATENCY_BOUNDS_MILLIS[i]` and not shorter than the bound
 * before it; the last bucket counts spans of 30 s or more. Log-spaced (1–2.5–5 per decade), so a
 * quantile read from it is within a factor of 2.5 of the truth, and within its bucket by
 * interpolation: enough to tell a node answering in 0.3 s from one answering in 2.4 s.
 */
export const LATENCY_BOUNDS_MILLIS: readonly number[] = Object.freeze([
  10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000,
]);

/** Buckets of a latency histogram: one per bound, and one for 30 s or more. */
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MILLIS.length + 1;

/** The bucket a span of `durationMillis` counts in; a negative duration counts in the first. */
export function latencyBucketOf(durationMillis: number): number {
  // Eleven comparisons at most, no allocation: this runs for every SERVER span.
  let i = 0;
  while (i < LATENCY_BOUNDS_MILLIS.length && durationMillis >= LATENCY_BOUNDS_MILLIS[i]!) i++;
  return i;
}

/** Zeros, one per bucket, as a packed array of small integers: copying it is how a histogram is made. */
const ZEROS: readonly number[] = Array.from({ length: LATENCY_BUCKETS }, () => 0);

/**
 * An empty histogram. A copy of a packed array (`new Array(n).fill(0)` makes a holey one, slower to
 * make and to add into): routing makes one per node and second.
 */
export function emptyLatency(): number[] {
  return ZEROS.slice();
}

/** Adds `counts` into `into`, bucket by bucket. */
export function addLatency(into: number[], counts: readonly number[]): void {
  for (let i = 0; i < LATENCY_BUCKETS; i++) into[i]! += counts[i] ?? 0;
}

/**
 * The `q` quantile (0 < q < 1) of the histogram's durations in milliseconds, interpolated linearly
 * within its bucket (the open last bucket reads as its lower bound); NaN for an empty histogram.
 */
export function latencyQuantileMillis(counts: readonly number[], q: number): number {
  let total = 0;
  for (let i = 0; i < LATENCY_BUCKETS; i++) total += counts[i] ?? 0;
  if (total === 0) return Number.NaN;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < LATENCY_BUCKETS; i++) {
    const count = counts[i] ?? 0;
    if (count > 0 && below + count >= rank) {
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MILLIS[i - 1]!;
      if (i === LATENCY_BOUNDS_MILLIS.length) return lower;
      const upper = LATENCY_BOUNDS_MILLIS[i]!;
      return lower + ((rank - below) / count) * (upper - lower);
    }
    below += count;
  }
  return LATENCY_BOUNDS_MILLIS[LATENCY_BOUNDS_MILLIS.length - 1]!;
}
