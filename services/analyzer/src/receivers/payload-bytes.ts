/**
 * A payload's bytes as its transport delivered them, made contiguous only for the synchronous
 * moment they are decoded.
 *
 * An HTTP body arrives in socket-sized chunks. Joining them into a fresh buffer per request cost
 * about a quarter of the receivers' time under load (profiled at ~400k spans/s): an allocation of
 * hundreds of KiB is new memory from the kernel each time (page faults and zeroing), written once
 * and dropped. Instead the chunks are copied into one scratch buffer the receiver keeps, and the
 * decoders — whose results never alias their input (packages/otlp) — run on that.
 */
export interface PayloadBytes {
  readonly byteLength: number;
  /** Calls `use` with the bytes, synchronously; `use` must not keep a reference to them. */
  read<T>(use: (bytes: Uint8Array) => T): T;
}

/** Bytes that already are one buffer (a gRPC message, a Kafka record value). */
export function wholePayload(bytes: Uint8Array): PayloadBytes {
  return { byteLength: bytes.byteLength, read: (use) => use(bytes) };
}

/** `chunks` (`byteLength` bytes in all), joined in `scratch` when they are read. */
export function chunkedPayload(
  chunks: readonly Uint8Array[],
  byteLength: number,
  scratch: ScratchBuffer,
): PayloadBytes {
  return { byteLength, read: (use) => scratch.joined(chunks, byteLength, use) };
}

/**
 * One reusable buffer, grown to the largest payload joined in it (in powers of two, so at most
 * twice the receiver's body limit). A nested `joined` call, which the receivers never make, gets a
 * buffer of its own rather than overwriting bytes still in use.
 */
export class ScratchBuffer {
  #buffer: Buffer = Buffer.alloc(0);
  #inUse = false;

  get capacityBytes(): number {
    return this.#buffer.byteLength;
  }

  joined<T>(chunks: readonly Uint8Array[], byteLength: number, use: (bytes: Uint8Array) => T): T {
    let total = 0;
    for (const chunk of chunks) total += chunk.byteLength;
    if (total !== byteLength) throw new RangeError(`chunks hold ${total} bytes, expected ${byteLength}`);
    if (chunks.length === 1) return use(chunks[0]!);
    if (this.#inUse) return use(Buffer.concat(chunks, byteLength));
    if (this.#buffer.byteLength < byteLength) {
      let capacity = Math.max(64 * 1024, this.#buffer.byteLength);
      while (capacity < byteLength) capacity *= 2;
      this.#buffer = Buffer.allocUnsafe(capacity);
    }
    const buffer = this.#buffer;
    let at = 0;
    for (const chunk of chunks) {
      buffer.set(chunk, at);
      at += chunk.byteLength;
    }
    this.#inUse = true;
    try {
      return use(buffer.subarray(0, byteLength));
    } finally {
      this.#inUse = false;
    }
  }
}
