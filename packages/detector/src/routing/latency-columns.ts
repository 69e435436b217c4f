import { LATENCY_BUCKETS } from '@keyscope/attempts';
import type { LatencyHistograms } from './activity-series.ts';

/** Buckets (seconds, by default) per chunk: a node that sent for one second holds one chunk. */
const CHUNK_BUCKETS = 64;
/** Per bucket: its histogram, then 1 if it has one. */
const STRIDE = LATENCY_BUCKETS + 1;
/** Per chunk: its buckets, then how many of them have a histogram. */
const CHUNK_LENGTH = CHUNK_BUCKETS * STRIDE + 1;

/**
 * Latency histograms by bucket index, for one node or one service's nodes together, kept in
 * chunks of typed arrays: a two-hour window of one node is 7,200 histograms, which as arrays in a
 * map cost ~150 bytes each and are objects every full garbage collection marks; here they are 52
 * bytes in memory a collection does not read. Counts add up bucket by bucket (`add`), and are read
 * by adding them into a caller's histogram (`addTo`), so reading allocates nothing.
 */
export class LatencyColumns implements LatencyHistograms {
  private readonly chunks = new Map<number, Uint32Array>();
  private histograms = 0;
  /** The chunk last looked up: a verdict reads the buckets around one, mostly in one chunk. */
  private lastChunkIndex = Number.NaN;
  private lastChunk: Uint32Array | undefined;

  /** Buckets with a histogram. */
  get size(): number {
    return this.histograms;
  }

  has(index: number): boolean {
    const chunk = this.chunkOf(index);
    return chunk !== undefined && chunk[offsetOf(index) + LATENCY_BUCKETS] === 1;
  }

  /** Adds `counts` (a histogram) into bucket `index`'s, which it creates if there is none. */
  add(index: number, counts: readonly number[]): void {
    let chunk = this.chunkOf(index);
    if (chunk === undefined) {
      chunk = new Uint32Array(CHUNK_LENGTH);
      this.chunks.set(Math.floor(index / CHUNK_BUCKETS), chunk);
      this.lastChunk = chunk;
    }
    const offset = offsetOf(index);
    if (chunk[offset + LATENCY_BUCKETS] === 0) {
      chunk[offset + LATENCY_BUCKETS] = 1;
      chunk[CHUNK_LENGTH - 1]!++;
      this.histograms++;
    }
    for (let i = 0; i < LATENCY_BUCKETS; i++) chunk[offset + i]! += counts[i] ?? 0;
  }

  addTo(index: number, into: number[], sign = 1): boolean {
    const chunk = this.chunkOf(index);
    if (chunk === undefined) return false;
    const offset = offsetOf(index);
    if (chunk[offset + LATENCY_BUCKETS] === 0) return false;
    for (let i = 0; i < LATENCY_BUCKETS; i++) into[i]! += sign * chunk[offset + i]!;
    return true;
  }

  /** Drops bucket `index`'s histogram, and its chunk once it holds none. */
  delete(index: number): void {
    const chunk = this.chunkOf(index);
    if (chunk === undefined) return;
    const offset = offsetOf(index);
    if (chunk[offset + LATENCY_BUCKETS] === 0) return;
    chunk.fill(0, offset, offset + STRIDE);
    this.histograms--;
    if (--chunk[CHUNK_LENGTH - 1]! === 0) {
      this.chunks.delete(this.lastChunkIndex);
      this.lastChunk = undefined;
    }
  }

  /** The chunk holding bucket `index`, if any; it is the one `lastChunk` remembers after. */
  private chunkOf(index: number): Uint32Array | undefined {
    const chunkIndex = Math.floor(index / CHUNK_BUCKETS);
    if (chunkIndex !== this.lastChunkIndex) {
      this.lastChunkIndex = chunkIndex;
      this.lastChunk = this.chunks.get(chunkIndex);
    }
    return this.lastChunk;
  }
}

/** Where bucket `index` starts in its chunk. */
function offsetOf(index: number): number {
  // The remainder of a negative index is negative: bucket indexes are times, never negative, but
  // a chunk's position must be its own either way.
  const inChunk = index - Math.floor(index / CHUNK_BUCKETS) * CHUNK_BUCKETS;
  return inChunk * STRIDE;
}
