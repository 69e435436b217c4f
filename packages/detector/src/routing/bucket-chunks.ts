/** Buckets (seconds, by default) per chunk: a node that sent for one second holds one chunk. */
export const CHUNK_BUCKETS = 64;

/**
 * Per-bucket values of the routing window in chunks of typed arrays, `stride` numbers per bucket,
 * instead of a map of bucket index to value: bucket indexes are seconds since 1970, past the small
 * integers a map keeps inline, so a map holds an object or two per bucket, and every bucket of the
 * two-hour window of every node has one — objects every full garbage collection marks. A chunk's
 * last number counts the buckets set in it; a chunk is dropped when that reaches zero.
 */
export class BucketChunks<Chunk extends Uint32Array | Float64Array> {
  private readonly chunks = new Map<number, Chunk>();
  /** The chunk last looked up: readers read the buckets around one, mostly in one chunk. */
  private lastChunkIndex = Number.NaN;
  private lastChunk: Chunk | undefined;

  /** `make(length)`: a new chunk, its buckets unset. */
  constructor(
    private readonly stride: number,
    private readonly make: (length: number) => Chunk,
  ) {}

  /** The chunk holding bucket `index`, if any. */
  chunkOf(index: number): Chunk | undefined {
    const chunkIndex = Math.floor(index / CHUNK_BUCKETS);
    if (chunkIndex !== this.lastChunkIndex) {
      this.lastChunkIndex = chunkIndex;
      this.lastChunk = this.chunks.get(chunkIndex);
    }
    return this.lastChunk;
  }

  /** The chunk holding bucket `index`, made if there is none. */
  chunkFor(index: number): Chunk {
    let chunk = this.chunkOf(index);
    if (chunk === undefined) {
      chunk = this.make(CHUNK_BUCKETS * this.stride + 1);
      chunk[CHUNK_BUCKETS * this.stride] = 0;
      this.chunks.set(this.lastChunkIndex, chunk);
      this.lastChunk = chunk;
    }
    return chunk;
  }

  /** Where bucket `index`'s numbers start in its chunk. */
  offsetOf(index: number): number {
    // A negative index's remainder is negative: bucket indexes are times, never negative, but a
    // bucket's place must be in its own chunk either way.
    return (index - Math.floor(index / CHUNK_BUCKETS) * CHUNK_BUCKETS) * this.stride;
  }

  /** A bucket of the chunk last looked up (`chunkFor`) was set. */
  added(): void {
    this.lastChunk![CHUNK_BUCKETS * this.stride]!++;
  }

  /** A bucket of the chunk last looked up (`chunkOf`) was unset: the chunk goes once none is set. */
  removed(): void {
    const chunk = this.lastChunk!;
    if (--chunk[CHUNK_BUCKETS * this.stride]! > 0) return;
    this.chunks.delete(this.lastChunkIndex);
    this.lastChunk = undefined;
  }
}
