/**
 * What the detector remembers about each key between batches, kept small because a pipeline
 * tracks millions of keys: most keys are one request executed once, and need only enough to
 * notice when that stops being true (a second attempt at the same tier, a second node, a second
 * tenant). Such a key becomes *suspect*; from then on every attempt of it re-judges the key from
 * the AttemptLog.
 *
 * Stored as columns (typed arrays indexed by a slot per key) rather than an object per key: no
 * object header, no boxed doubles, nothing for the collector to trace — about a third of the
 * memory. Two tiers fit (a front service and one downstream); a key seen at more is suspect.
 * Tier, node and tenant are interned ids (see Interner).
 *
 * Nothing here needs persisting: the AttemptLog holds every attempt, so a key evicted beyond
 * `maxKeys`, or lost in a restart, is rebuilt by replaying its attempts.
 *
 * Each key also counts its attempts, up to `maxAttemptsPerKey`: a key at that count is *capped*
 * (a hot key), and the detector keeps none of its later attempts.
 */
export class KeyTable {
  readonly #maxAttemptsPerKey: number;
  /** Keys in the table whose count reached `maxAttemptsPerKey`. */
  #capped = 0;
  /**
   * Key → slot, in least-recently-touched order give or take RETOUCH_MILLIS: touching re-inserts a
   * key, unless its last attempt is that recent (see `find`).
   */
  readonly #slots = new Map<string, number>();
  /** The latest attempt end any key has seen: the event-time clock `find` compares with. */
  #latestSeen = Number.NEGATIVE_INFINITY;
  readonly #free: number[] = [];
  #capacity = 0;
  #used = 0;
  #lastSeen = new Float64Array(0);
  #tierA = new Int32Array(0);
  #nodeA = new Int32Array(0);
  #tierB = new Int32Array(0);
  #nodeB = new Int32Array(0);
  #tenant = new Int32Array(0);
  /** Attempts observed, saturating at `maxAttemptsPerKey`. */
  #attempts = new Uint32Array(0);
  /** Bits 0–1: server attempts at tier A (saturating at 2); bits 2–3: at tier B; bit 4: suspect; bit 5: in the coverage sample. */
  #flags = new Uint8Array(0);

  constructor(maxAttemptsPerKey = Number.POSITIVE_INFINITY) {
    // Counts are 32-bit: a key with 2^32 attempts in the log is not reached in practice.
    this.#maxAttemptsPerKey = Math.min(maxAttemptsPerKey, 0xffff_ffff);
  }

  get size(): number {
    return this.#slots.size;
  }

  /**
   * The key's slot, touched; undefined when the key is not in memory. A key's attempts mostly come
   * in a burst (the client's, then each tier's, within a second): moving it to the back of the
   * order on each of them cost two more map operations per attempt (a delete and an insert), for
   * an order that is already by event time only roughly. So a key whose last attempt ended within
   * RETOUCH_MILLIS of the latest one seen keeps its place; the expiry sweep and the eviction of
   * the oldest keys are then off by at most that much of a 24-hour horizon.
   */
  find(key: string): number | undefined {
    const slot = this.#slots.get(key);
    if (slot !== undefined && this.#lastSeen[slot]! < this.#latestSeen - RETOUCH_MILLIS) {
      this.#slots.delete(key);
      this.#slots.set(key, slot);
    }
    return slot;
  }

  /** The key's slot, without touching its recency (`find` makes it the most recent). */
  peek(key: string): number | undefined {
    return this.#slots.get(key);
  }

  add(key: string): number {
    let slot = this.#free.pop();
    if (slot === undefined) {
      if (this.#used === this.#capacity) this.#grow();
      slot = this.#used++;
    }
    this.#lastSeen[slot] = Number.NEGATIVE_INFINITY;
    this.#tierA[slot] = -1;
    this.#nodeA[slot] = -1;
    this.#tierB[slot] = -1;
    this.#nodeB[slot] = -1;
    this.#tenant[slot] = -1;
    this.#flags[slot] = 0;
    this.#attempts[slot] = 0;
    this.#slots.set(key, slot);
    return slot;
  }

  delete(key: string): void {
    const slot = this.#slots.get(key);
    if (slot === undefined) return;
    this.#slots.delete(key);
    this.#free.push(slot);
    if (this.#attempts[slot] === this.#maxAttemptsPerKey) this.#capped--;
  }

  /** Keys, least recently touched first. */
  keys(): IterableIterator<string> {
    return this.#slots.keys();
  }

  /** Attempts the key has observed (0 when it is not in memory). */
  attemptCount(key: string): number {
    const slot = this.#slots.get(key);
    return slot === undefined ? 0 : this.#attempts[slot]!;
  }

  /** Attempts the slot's key has observed. */
  attemptsAt(slot: number): number {
    return this.#attempts[slot]!;
  }

  /** Whether the slot's key reached `maxAttemptsPerKey`. */
  isCapped(slot: number): boolean {
    return this.#attempts[slot] === this.#maxAttemptsPerKey;
  }

  /** Keys in the table that reached `maxAttemptsPerKey`. */
  get cappedKeys(): number {
    return this.#capped;
  }

  lastSeen(key: string): number {
    const slot = this.#slots.get(key);
    return slot === undefined ? Number.NEGATIVE_INFINITY : this.#lastSeen[slot]!;
  }

  /**
   * Records (and counts) one attempt. `tier` is -1 for a client attempt (no tier). Returns
   * OBSERVED_SUSPECT when the key is (now) suspect, OR-ed with OBSERVED_FIRST_AT_TIER when the
   * attempt landed at a tier the key had not reached: bits, not a callback, since this runs for
   * every attempt.
   */
  observe(
    slot: number,
    endUnixMillis: number,
    tenant: number,
    tier: number,
    node: number,
    server: boolean,
  ): number {
    const attempts = this.#attempts[slot]!;
    if (attempts < this.#maxAttemptsPerKey) {
      this.#attempts[slot] = attempts + 1;
      if (attempts + 1 === this.#maxAttemptsPerKey) this.#capped++;
    }
    if (endUnixMillis > this.#lastSeen[slot]!) this.#lastSeen[slot] = endUnixMillis;
    if (endUnixMillis > this.#latestSeen) this.#latestSeen = endUnixMillis;
    let flags = this.#flags[slot]!;
    if (tenant !== -1) {
      const known = this.#tenant[slot]!;
      if (known === -1) this.#tenant[slot] = tenant;
      else if (known !== tenant) flags |= SUSPECT;
    }
    let observed = 0;
    if (tier !== -1) {
      if (this.#tierA[slot] === tier) {
        const count = Math.min(2, (flags & 3) + (server ? 1 : 0));
        flags = (flags & ~3) | count;
        if (count >= 2 || this.#nodeA[slot] !== node) flags |= SUSPECT;
      } else if (this.#tierB[slot] === tier) {
        const count = Math.min(2, ((flags >> 2) & 3) + (server ? 1 : 0));
        flags = (flags & ~12) | (count << 2);
        if (count >= 2 || this.#nodeB[slot] !== node) flags |= SUSPECT;
      } else {
        observed = OBSERVED_FIRST_AT_TIER;
        if (this.#tierA[slot] === -1) {
          this.#tierA[slot] = tier;
          this.#nodeA[slot] = node;
          flags = (flags & ~3) | (server ? 1 : 0);
        } else if (this.#tierB[slot] === -1) {
          this.#tierB[slot] = tier;
          this.#nodeB[slot] = node;
          flags = (flags & ~12) | ((server ? 1 : 0) << 2);
        } else flags |= SUSPECT;
      }
    }
    this.#flags[slot] = flags;
    return (flags & SUSPECT) === 0 ? observed : observed | OBSERVED_SUSPECT;
  }

  /**
   * Makes the slot's key suspect whatever its tiers say: an attempt of it may be the mark of an
   * execution whose spans were lost (unseen-execution.ts), which only its full evidence can tell.
   */
  markSuspect(slot: number): void {
    this.#flags[slot] = this.#flags[slot]! | SUSPECT;
  }

  /** Marks the slot's key as one whose evidence coverage is counted (`coversKey`). */
  markCovered(slot: number): void {
    this.#flags[slot] = this.#flags[slot]! | COVERED;
  }

  isCovered(slot: number): boolean {
    return (this.#flags[slot]! & COVERED) !== 0;
  }

  /** Replaces every interned id of the keys in memory (tier, node, tenant; not -1) by `remap(id)`. */
  remapInterned(remap: (id: number) => number): void {
    for (const slot of this.#slots.values()) {
      for (const column of [this.#tierA, this.#nodeA, this.#tierB, this.#nodeB, this.#tenant]) {
        const id = column[slot]!;
        if (id !== -1) column[slot] = remap(id);
      }
    }
  }

  #grow(): void {
    const capacity = Math.max(1024, this.#capacity * 2);
    const grown = <T extends Float64Array | Int32Array | Uint32Array | Uint8Array>(
      from: T,
      make: (n: number) => T,
    ): T => {
      const to = make(capacity);
      to.set(from);
      return to;
    };
    this.#lastSeen = grown(this.#lastSeen, (n) => new Float64Array(n));
    this.#tierA = grown(this.#tierA, (n) => new Int32Array(n));
    this.#nodeA = grown(this.#nodeA, (n) => new Int32Array(n));
    this.#tierB = grown(this.#tierB, (n) => new Int32Array(n));
    this.#nodeB = grown(this.#nodeB, (n) => new Int32Array(n));
    this.#tenant = grown(this.#tenant, (n) => new Int32Array(n));
    this.#flags = grown(this.#flags, (n) => new Uint8Array(n));
    this.#attempts = grown(this.#attempts, (n) => new Uint32Array(n));
    this.#capacity = capacity;
  }
}

const SUSPECT = 16;
/** `observe`'s answer: the key is (now) suspect. */
export const OBSERVED_SUSPECT = 1;
/** `observe`'s answer: the attempt landed at a tier the key had not reached. */
export const OBSERVED_FIRST_AT_TIER = 2;
/** The key is in the evidence coverage's sample. */
const COVERED = 32;
/** How recent a key's last attempt may be for touching it to leave its place in the order. */
export const RETOUCH_MILLIS = 60_000;
