import { describe, expect, it } from 'vitest';
import {
  addLatency,
  emptyLatency,
  LATENCY_BOUNDS_MILLIS,
  LATENCY_BUCKETS,
  latencyBucketOf,
  latencyQuantileMillis,
} from '../src/latency-histogram.ts';

function histogramOf(durations: number[]): number[] {
  const counts = emptyLatency();
  for (const duration of durations) counts[latencyBucketOf(duration)]!++;
  return counts;
}

describe('latency histogram', () => {
  it('puts a duration in the bucket whose bounds hold it, a bound in the bucket above', () => {
    expect(latencyBucketOf(-3)).toBe(0);
    expect(latencyBucketOf(9.9)).toBe(0);
    expect(latencyBucketOf(10)).toBe(1);
    expect(latencyBucketOf(999)).toBe(LATENCY_BOUNDS_MILLIS.indexOf(1000));
    expect(latencyBucketOf(1000)).toBe(LATENCY_BOUNDS_MILLIS.indexOf(1000) + 1);
    expect(latencyBucketOf(30_000)).toBe(LATENCY_BUCKETS - 1);
    expect(latencyBucketOf(Number.POSITIVE_INFINITY)).toBe(LATENCY_BUCKETS - 1);
  });

  it('reads a p90 within the bucket of the true p90', () => {
    // 90 spans at 300 ms, 10 at 2.4 s: the p90 is the last of the fast ones.
    const counts = histogramOf([...Array(90).fill(300), ...Array(10).fill(2_400)]);
    const p90 = latencyQuantileMillis(counts, 0.9);
    expect(p90).toBeGreaterThanOrEqual(250);
    expect(p90).toBeLessThanOrEqual(500);
    const slow = histogramOf([...Array(50).fill(300), ...Array(50).fill(2_400)]);
    const slowP90 = latencyQuantileMillis(slow, 0.9);
    expect(slowP90).toBeGreaterThanOrEqual(1_000);
    expect(slowP90).toBeLessThanOrEqual(2_500);
  });

  it('reads nothing from an empty histogram and the lower bound of the open last bucket', () => {
    expect(latencyQuantileMillis(emptyLatency(), 0.9)).toBeNaN();
    expect(latencyQuantileMillis(histogramOf([60_000]), 0.9)).toBe(30_000);
  });

  it('adds histograms bucket by bucket, in any order, to the histogram of all their spans', () => {
    const parts = [
      [5, 300, 2_400],
      [320, 45_000],
      [12, 999, 1_000],
    ];
    const forward = emptyLatency();
    for (const part of parts) addLatency(forward, histogramOf(part));
    const backward = emptyLatency();
    for (const part of [...parts].reverse()) addLatency(backward, histogramOf(part));
    expect(forward).toEqual(histogramOf(parts.flat()));
    expect(backward).toEqual(forward);
  });
});
