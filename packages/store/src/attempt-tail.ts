import type { Attempt } from '@keyscope/attempts';

/**
 * The attempts appended to the attempt table since its last indexing, by partition key (see
 * AttemptTable): for each key, the attempts of the transaction under way (kept whole until the
 * table's `flush` writes them), where its arrays in rows not yet indexed are, and a 32-bit hash
 * of the span id of each attempt in them (`spanIdHash`), for the redelivery check.
 *
 * In columns rather than an object per key: the tail holds up to 20,000 attempts for a second or
 * more under load, long enough for everything in it to be copied by a scavenge and promoted, and
 * an object per key with two arrays and a span id string per attempt was most of what the
 * embedded service's young generation copied (~5 MB of the ~8 MB that survived each scavenge).
 * Segments and hashes sit in typed arrays, linked per key, reused from one indexing to the next;
 * a key costs its map entry and a slot.
 *
 * A hash is not an id: a key's attempt whose span id hashes like one already written is checked
 * against the attempts read back from its rows (`AttemptTable`), so the check stays exact.
 */
export class AttemptTail {
  /** Partition key → slot. */
  readonly #slots = new Map<string, number>();
  /** Slot → partition key. */
  readonly #keys: string[] = [];
  /** Slot → attempts of the transaction under way, or undefined. */
  readonly #pending: (Attempt[] | undefined)[] = [];
  /** Slot → whether the index may hold the key (the key filter's answer when the slot was made). */
  #mayBeIndexed = new Uint8Array(0);
  /** Slot → its first and last segment, or -1. */
  #firstSegment = new Int32Array(0);
  #lastSegment = new Int32Array(0);
  /** Slot → its first and last hash, or -1. */
  #firstHash = new Int32Array(0);
  #lastHash = new Int32Array(0);
  /** Segments, four ints each: row id, start, length (in bytes of the row's body), next segment. */
  #segments = new Int32Array(0);
  #segmentCount = 0;
  /** Hashes, two ints each: span id hash, next hash. */
  #hashes = new Int32Array(0);
  #hashCount = 0;
  /** Attempts in the tail, written or pending. */
  size = 0;

  /** The key's slot, or -1. */
  slotOf(partitionKey: string): number {
    return this.#slots.get(partitionKey) ?? -1;
  }

  /** A slot for a key not in the tail. */
  add(partitionKey: string, mayBeIndexed: boolean): number {
    const slot = this.#slots.size;
    if (slot === this.#mayBeIndexed.length) this.#growSlots();
    this.#slots.set(partitionKey, slot);
    this.#keys[slot] = partitionKey;
    this.#pending[slot] = undefined;
    this.#mayBeIndexed[slot] = mayBeIndexed ? 1 : 0;
    this.#firstSegment[slot] = -1;
    this.#lastSegment[slot] = -1;
    this.#firstHash[slot] = -1;
    this.#lastHash[slot] = -1;
    return slot;
  }

  keyOf(slot: number): string {
    return this.#keys[slot]!;
  }

  mayBeIndexed(slot: number): boolean {
    return this.#mayBeIndexed[slot] === 1;
  }

  /** The attempts of the transaction under way; undefined when none. */
  pending(slot: number): Attempt[] | undefined {
    return this.#pending[slot];
  }

  /** Adds an attempt of the transaction under way; true when it is the slot's first. */
  addPending(slot: number, attempt: Attempt): boolean {
    this.size++;
    const pending = this.#pending[slot];
    if (pending === undefined) {
      this.#pending[slot] = [attempt];
      return true;
    }
    pending.push(attempt);
    return false;
  }

  /**
   * The slot's pending attempts were written at `[start, start + length)` of row `rowId`'s body:
   * they leave `pending`, their span ids' hashes and the segment stay.
   */
  written(slot: number, rowId: number, start: number, length: number): void {
    const pending = this.#pending[slot];
    if (pending !== undefined) {
      for (const attempt of pending) this.addHash(slot, spanIdHash(attempt.spanId));
      this.#pending[slot] = undefined;
    }
    this.addSegment(slot, rowId, start, length);
  }

  /** Adds a segment to the slot (and no attempt: see `addHash`). */
  addSegment(slot: number, rowId: number, start: number, length: number): void {
    const at = this.#segmentCount++;
    if (4 * this.#segmentCount > this.#segments.length) this.#segments = grown(this.#segments);
    const segments = this.#segments;
    segments[4 * at] = rowId;
    segments[4 * at + 1] = start;
    segments[4 * at + 2] = length;
    segments[4 * at + 3] = -1;
    const last = this.#lastSegment[slot]!;
    if (last === -1) this.#firstSegment[slot] = at;
    else segments[4 * last + 3] = at;
    this.#lastSegment[slot] = at;
  }

  /** Adds the span id hash of an attempt written in the slot's segments. */
  addHash(slot: number, hash: number): void {
    const at = this.#hashCount++;
    if (2 * this.#hashCount > this.#hashes.length) this.#hashes = grown(this.#hashes);
    const hashes = this.#hashes;
    hashes[2 * at] = hash;
    hashes[2 * at + 1] = -1;
    const last = this.#lastHash[slot]!;
    if (last === -1) this.#firstHash[slot] = at;
    else hashes[2 * last + 1] = at;
    this.#lastHash[slot] = at;
  }

  /** Whether an attempt written in the slot's segments has a span id with this hash. */
  mayHoldWritten(slot: number, hash: number): boolean {
    const hashes = this.#hashes;
    for (let at = this.#firstHash[slot]!; at !== -1; at = hashes[2 * at + 1]!) {
      if (hashes[2 * at] === hash) return true;
    }
    return false;
  }

  /** Calls `use` with each of the slot's segments, in the order they were written. */
  forEachSegment(slot: number, use: (rowId: number, start: number, length: number) => void): void {
    const segments = this.#segments;
    for (let at = this.#firstSegment[slot]!; at !== -1; at = segments[4 * at + 3]!) {
      use(segments[4 * at]!, segments[4 * at + 1]!, segments[4 * at + 2]!);
    }
  }

  /** Keys and slots, in the order the keys came. */
  entries(): IterableIterator<[string, number]> {
    return this.#slots.entries();
  }

  keys(): IterableIterator<string> {
    return this.#slots.keys();
  }

  /** Empties the tail, keeping the room it grew. */
  clear(): void {
    this.#slots.clear();
    this.#keys.length = 0;
    this.#pending.length = 0;
    this.#segmentCount = 0;
    this.#hashCount = 0;
    this.size = 0;
  }

  #growSlots(): void {
    const capacity = Math.max(1024, 2 * this.#mayBeIndexed.length);
    const widen = <T extends Uint8Array | Int32Array>(from: T, make: (n: number) => T): T => {
      const to = make(capacity);
      to.set(from);
      return to;
    };
    this.#mayBeIndexed = widen(this.#mayBeIndexed, (n) => new Uint8Array(n));
    this.#firstSegment = widen(this.#firstSegment, (n) => new Int32Array(n));
    this.#lastSegment = widen(this.#lastSegment, (n) => new Int32Array(n));
    this.#firstHash = widen(this.#firstHash, (n) => new Int32Array(n));
    this.#lastHash = widen(this.#lastHash, (n) => new Int32Array(n));
  }
}

function grown(from: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const to = new Int32Array(Math.max(4096, 2 * from.length));
  to.set(from);
  return to;
}

/** FNV-1a over the span id's UTF-16 code units: any string, though span ids are 16 hex digits. */
export function spanIdHash(spanId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < spanId.length; i++) hash = Math.imul(hash ^ spanId.charCodeAt(i), 0x01000193);
  return hash | 0;
}
