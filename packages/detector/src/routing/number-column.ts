import { BucketChunks } from './bucket-chunks.ts';

/**
 * One number per bucket index (a bucket's version, a node's cached verdict on it), in chunks of
 * typed arrays (bucket-chunks.ts) instead of a map; NaN marks a bucket without one.
 */
export class NumberColumn {
  private readonly chunks = new BucketChunks(1, (length) => new Float64Array(length).fill(Number.NaN));

  get(index: number): number | undefined {
    const value = this.chunks.chunkOf(index)?.[this.chunks.offsetOf(index)];
    return value === undefined || Number.isNaN(value) ? undefined : value;
  }

  /** Sets bucket `index`'s number (not NaN). */
  set(index: number, value: number): void {
    const chunk = this.chunks.chunkFor(index);
    const offset = this.chunks.offsetOf(index);
    if (Number.isNaN(chunk[offset]!)) this.chunks.added();
    chunk[offset] = value;
  }

  /** Forgets bucket `index`'s number. */
  delete(index: number): void {
    const chunk = this.chunks.chunkOf(index);
    if (chunk === undefined) return;
    const offset = this.chunks.offsetOf(index);
    if (Number.isNaN(chunk[offset]!)) return;
    chunk[offset] = Number.NaN;
    this.chunks.removed();
  }
}
