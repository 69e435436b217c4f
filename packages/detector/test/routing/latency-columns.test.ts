import { emptyLatency, LATENCY_BUCKETS } from '@keyscope/attempts';
import { describe, expect, it } from 'vitest';
import { LatencyColumns } from '../../src/routing/latency-columns.ts';

/** A histogram with `count` in bucket `bucket`. */
function histogram(bucket: number, count: number): number[] {
  const counts = emptyLatency();
  counts[bucket] = count;
  return counts;
}

function read(columns: LatencyColumns, index: number, sign = 1): number[] | undefined {
  const into = emptyLatency();
  return columns.addTo(index, into, sign) ? into : undefined;
}

describe('LatencyColumns', () => {
  it('sums the histograms added to a bucket, bucket by bucket, and keeps buckets apart', () => {
    const columns = new LatencyColumns();
    columns.add(1_700_000_000, histogram(2, 3));
    columns.add(1_700_000_000, histogram(2, 4));
    columns.add(1_700_000_000, histogram(LATENCY_BUCKETS - 1, 1));
    columns.add(1_700_000_001, histogram(0, 9));

    expect(read(columns, 1_700_000_000)).toEqual(
      emptyLatency().map((_, i) => (i === 2 ? 7 : i === LATENCY_BUCKETS - 1 ? 1 : 0)),
    );
    expect(read(columns, 1_700_000_001)).toEqual(histogram(0, 9));
    expect(columns.size).toBe(2);
  });

  it('tells a bucket with no histogram from one whose histogram is all zeros', () => {
    const columns = new LatencyColumns();
    columns.add(10, emptyLatency());

    expect(columns.has(10)).toBe(true);
    expect(read(columns, 10)).toEqual(emptyLatency());
    expect(columns.has(11)).toBe(false);
    expect(read(columns, 11)).toBeUndefined();
    expect(read(columns, 10_000)).toBeUndefined();
  });

  it('adds into what the reader holds, or takes away with a sign of -1', () => {
    const columns = new LatencyColumns();
    columns.add(5, histogram(3, 2));
    const into = histogram(3, 10);

    columns.addTo(5, into);
    expect(into[3]).toBe(12);
    columns.addTo(5, into, -1);
    columns.addTo(5, into, -1);
    expect(into[3]).toBe(8);
  });

  it('forgets deleted buckets, and starts a bucket added again after its delete from zero', () => {
    const columns = new LatencyColumns();
    for (let index = 0; index < 200; index++) columns.add(index, histogram(1, index + 1));
    for (let index = 0; index < 100; index++) columns.delete(index);
    columns.delete(100_000);

    expect(columns.size).toBe(100);
    expect(columns.has(99)).toBe(false);
    expect(read(columns, 100)).toEqual(histogram(1, 101));
    // A bucket added again after its delete starts from zero.
    columns.add(50, histogram(1, 1));
    expect(read(columns, 50)).toEqual(histogram(1, 1));
    for (let index = 0; index < 200; index++) columns.delete(index);
    expect(columns.size).toBe(0);
    expect(columns.has(150)).toBe(false);
  });

  it('keeps negative bucket indexes in chunks of their own', () => {
    const columns = new LatencyColumns();
    columns.add(-1, histogram(0, 1));
    columns.add(63, histogram(0, 2));

    expect(read(columns, -1)).toEqual(histogram(0, 1));
    expect(read(columns, 63)).toEqual(histogram(0, 2));
    expect(read(columns, -65)).toBeUndefined();
  });
});
