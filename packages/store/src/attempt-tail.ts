import type { Attempt } from '@keyscope/attempts';

/**
 * The attempts appended to the attempt table since its last indexing, by partition key (see
 * AttemptTable): for each key, the attempts of the transaction under way (kept whole until the
 * table's `flush` writes them), where its arrays in rows not yet indexed are, and a 32-bit hash
 * of the span id of each attempt in them (`spanIdHash`), for the redelivery check.
 *
 * In columns rather than an object per key: the tail holds an indexing's worth of attempts
 * (INDEX_BATCH_ROWS, attempt-table.ts) for a fraction of a second or more under load, long enough
 * for everything in it to be copied by a scavenge and promoted, and an object per key with two arrays and a span id string
 * per attempt was most of what the embedded service's young generation copied (~5 MB of the
 * ~8 MB that survived each scavenge).
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
  /** Slot → the key's attempts in the tail, written or pending. */
  #attempts = new Int32Array(0);
  /** Per slot, its segments: row id, start, length (in bytes of the row's body). */
  readonly #segments = new RecordChains(3);
  /** Per slot, the span id hash of each attempt written in its segments. */
  readonly #hashes = new RecordChains(1);
  /** Attempts in the tail, written or pending. */
  size = 0;

  /** The key's slot, or -1. */
  slotOf(partitionKey: string): number {
    return this.#slots.get(partitionKey) ?? -1;
  }

  /** A slot for a key not in the tail. */
  add(partitionKey: string, mayBeIndexed: boolean): number {
    const slot = this.#slots.size;
    if (slot === this.#mayBeIndexed.length) {
      this.#mayBeIndexed = widened(this.#mayBeIndexed, slot);
      this.#attempts = widened(this.#attempts, slot);
    }
    this.#slots.set(partitionKey, slot);
    this.#keys[slot] = partitionKey;
    this.#pending[slot] = undefined;
    this.#mayBeIndexed[slot] = mayBeIndexed ? 1 : 0;
    this.#attempts[slot] = 0;
    this.#segments.start(slot);
    this.#hashes.start(slot);
    return slot;
  }

  keyOf(slot: number): string {
    return this.#keys[slot]!;
  }

  mayBeIndexed(slot: number): boolean {
    return this.#mayBeIndexed[slot] === 1;
  }

  /** The slot's attempts, written or pending. */
  attemptsIn(slot: number): number {
    return this.#attempts[slot]!;
  }

  /** The attempts of the transaction under way; undefined when none. */
  pending(slot: number): Attempt[] | undefined {
    return this.#pending[slot];
  }

  /** Adds an attempt of the transaction under way; true when it is the slot's first. */
  addPending(slot: number, attempt: Attempt): boolean {
    this.size++;
    this.#attempts[slot]!++;
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
      for (const attempt of pending) this.#hashes.append(slot, spanIdHash(attempt.spanId), 0, 0);
      this.#pending[slot] = undefined;
    }
    this.addSegment(slot, rowId, start, length);
  }

  /** Adds a segment to the slot (and no attempt: see `addHash`). */
  addSegment(slot: number, rowId: number, start: number, length: number): void {
    this.#segments.append(slot, rowId, start, length);
  }

  /** Adds an attempt written in the slot's segments (read back after a rollback): its span id's hash. */
  addHash(slot: number, hash: number): void {
    this.#hashes.append(slot, hash, 0, 0);
    this.#attempts[slot]!++;
  }

  /** Whether an attempt written in the slot's segments has a span id with this hash. */
  mayHoldWritten(slot: number, hash: number): boolean {
    const hashes = this.#hashes;
    for (let at = hashes.first(slot); at !== -1; at = hashes.next(at)) {
      if (hashes.field(at, 0) === hash) return true;
    }
    return false;
  }

  /** Calls `use` with each of the slot's segments, in the order they were written. */
  forEachSegment(slot: number, use: (rowId: number, start: number, length: number) => void): void {
    const segments = this.#segments;
    for (let at = segments.first(slot); at !== -1; at = segments.next(at)) {
      use(segments.field(at, 0), segments.field(at, 1), segments.field(at, 2));
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
    this.#segments.clear();
    this.#hashes.clear();
    this.size = 0;
  }
}

/**
 * Records of `width` ints in one growing Int32Array, chained per slot in the order appended: a
 * record is its fields and the index of the slot's next record (-1 after the last).
 */
class RecordChains {
  readonly #width: number;
  readonly #stride: number;
  #records = new Int32Array(0);
  #count = 0;
  /** Slot → its first and last record, or -1. */
  #first = new Int32Array(0);
  #last = new Int32Array(0);

  constructor(width: number) {
    this.#width = width;
    this.#stride = width + 1;
  }

  /** Makes the slot's chain empty. */
  start(slot: number): void {
    if (slot >= this.#first.length) {
      this.#first = widened(this.#first, slot);
      this.#last = widened(this.#last, slot);
    }
    this.#first[slot] = -1;
    this.#last[slot] = -1;
  }

  /** Appends a record to the slot's chain: its first `width` of `a`, `b`, `c`. */
  append(slot: number, a: number, b: number, c: number): void {
    const at = this.#count++;
    const base = at * this.#stride;
    if (base + this.#stride > this.#records.length)
      this.#records = widened(this.#records, base + this.#stride);
    const records = this.#records;
    records[base] = a;
    if (this.#width > 1) records[base + 1] = b;
    if (this.#width > 2) records[base + 2] = c;
    records[base + this.#width] = -1;
    const last = this.#last[slot]!;
    if (last === -1) this.#first[slot] = at;
    else records[last * this.#stride + this.#width] = at;
    this.#last[slot] = at;
  }

  /** The slot's first record, or -1. */
  first(slot: number): number {
    return this.#first[slot]!;
  }

  /** The record after `at` in its chain, or -1. */
  next(at: number): number {
    return this.#records[at * this.#stride + this.#width]!;
  }

  field(at: number, index: number): number {
    return this.#records[at * this.#stride + index]!;
  }

  /** Drops every record, keeping the room they took. */
  clear(): void {
    this.#count = 0;
  }
}

/** `from` in an array of the same kind with room for at least `needed` elements (doubling, at least 1,024). */
function widened<T extends Uint8Array<ArrayBuffer> | Int32Array<ArrayBuffer>>(from: T, needed: number): T {
  let capacity = Math.max(1024, from.length);
  while (capacity <= needed) capacity *= 2;
  const to = new (from.constructor as new (length: number) => T)(capacity);
  to.set(from);
  return to;
}

/** FNV-1a over the span id's UTF-16 code units: any string, though span ids are 16 hex digits. */
export function spanIdHash(spanId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < spanId.length; i++) hash = Math.imul(hash ^ spanId.charCodeAt(i), 0x01000193);
  return hash | 0;
}
