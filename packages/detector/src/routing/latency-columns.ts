import { LATENCY_BUCKETS } from '@keyscope/attempts';
import type { LatencyHistograms } from './activity-series.ts';
import { BucketChunks } from './bucket-chunks.ts';

/** Per bucket: its histogram, then 1 if it has one. */
const STRIDE = LATENCY_BUCKETS + 1;

/**
 * Latency histograms by bucket index, for one node or one service's nodes together, in chunks of
 * typed arrays (bucket-chunks.ts): a two-hour window of one node is 7,200 histograms, which as
 * arrays in a map cost ~150 bytes each and are objects every full garbage collection marks; here
 * they are 52 bytes in memory a collection does not read. Counts add up bucket by bucket (`add`),
 * and are read by adding them into a caller's histogram (`addTo`), so reading allocates nothing.
 */
export class LatencyColumns implements LatencyHistograms {
  private readonly chunks = new BucketChunks(STRIDE, (length) => new Uint32Array(length));
  private histograms = 0;

  /** Buckets with a histogram. */
  get size(): number {
    return this.histograms;
  }

  has(index: number): boolean {
    const chunk = this.chunks.chunkOf(index);
    return chunk !== undefined && chunk[this.chunks.offsetOf(index) + LATENCY_BUCKETS] === 1;
  }

  /** Adds `counts` (a histogram) into bucket `index`'s, which it creates if there is none. */
  add(index: number, counts: readonly number[]): void {
    const chunk = this.chunks.chunkFor(index);
    const offset = this.chunks.offsetOf(index);
    if (chunk[offset + LATENCY_BUCKETS] === 0) {
      chunk[offset + LATENCY_BUCKETS] = 1;
      this.chunks.added();
      this.histograms++;
    }
    for (let i = 0; i < LATENCY_BUCKETS; i++) chunk[offset + i]! += counts[i] ?? 0;
  }

  addTo(index: number, into: number[], sign = 1): boolean {
    const chunk = this.chunks.chunkOf(index);
    if (chunk === undefined) return false;
    const offset = this.chunks.offsetOf(index);
    if (chunk[offset + LATENCY_BUCKETS] === 0) return false;
    for (let i = 0; i < LATENCY_BUCKETS; i++) into[i]! += sign * chunk[offset + i]!;
    return true;
  }

  /** Drops bucket `index`'s histogram. */
  delete(index: number): void {
    const chunk = this.chunks.chunkOf(index);
    if (chunk === undefined) return;
    const offset = this.chunks.offsetOf(index);
    if (chunk[offset + LATENCY_BUCKETS] === 0) return;
    chunk.fill(0, offset, offset + STRIDE);
    this.histograms--;
    this.chunks.removed();
  }
}
