/**
 * A Bloom filter of strings: `mayContain` is false only for a string never added, and true for an
 * absent one with a probability of about 1% while the filter holds no more than its capacity
 * (10 bits and 7 probes per string). Sized in powers of two; strings cannot be removed.
 *
 * The attempt table keeps the partition keys its key index holds in one, so the attempts of a key
 * met for the first time skip the index lookups that would find nothing (most attempts are their
 * key's first or arrive with it in one payload).
 */
export class KeyFilter {
  readonly capacity: number;
  readonly #bits: Int32Array;
  readonly #mask: number;
  #size = 0;

  constructor(capacity: number) {
    this.capacity = Math.max(1024, capacity);
    let bits = 1 << 15;
    while (bits < this.capacity * BITS_PER_KEY) bits *= 2;
    this.#bits = new Int32Array(bits >>> 5);
    this.#mask = bits - 1;
  }

  /** Strings added (with repeats): past `capacity` the false-positive rate climbs. */
  get size(): number {
    return this.#size;
  }

  add(value: string): void {
    this.#probe(value, true);
    this.#size++;
  }

  mayContain(value: string): boolean {
    return this.#probe(value, false);
  }

  /** As `mayContain`, for a string hashed once (`keyHash`) to probe many filters. */
  mayContainHash(hash: KeyHash): boolean {
    return this.#probeHash(hash.h1, hash.h2, false);
  }

  /** Visits the value's bits, setting them when `set`; whether all were set before. */
  #probe(value: string, set: boolean): boolean {
    // Hashed here rather than through keyHash, so the probe every appended attempt makes allocates nothing.
    let h1 = SEED_1;
    let h2 = SEED_2;
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      h1 = Math.imul(h1 ^ code, FNV_PRIME);
      h2 = Math.imul(h2 ^ code, FNV_PRIME);
    }
    return this.#probeHash(avalanche(h1), avalanche(h2) | 1, set);
  }

  #probeHash(h1: number, h2: number, set: boolean): boolean {
    const bits = this.#bits;
    let all = true;
    for (let i = 0, at = h1; i < PROBES; i++, at = (at + h2) | 0) {
      const bit = at & this.#mask;
      const mask = 1 << (bit & 31);
      if ((bits[bit >>> 5]! & mask) !== 0) continue;
      if (!set) return false;
      all = false;
      bits[bit >>> 5]! |= mask;
    }
    return all;
  }
}

/** The two hashes a string's probes are made of, in every filter alike. */
export interface KeyHash {
  h1: number;
  h2: number;
}

/** The string's two hashes, as `KeyFilter` probes with them (FNV-1a from two seeds, avalanched). */
export function keyHash(value: string): KeyHash {
  let h1 = SEED_1;
  let h2 = SEED_2;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    h1 = Math.imul(h1 ^ code, FNV_PRIME);
    h2 = Math.imul(h2 ^ code, FNV_PRIME);
  }
  return { h1: avalanche(h1), h2: avalanche(h2) | 1 };
}

const BITS_PER_KEY = 10;
const PROBES = 7;
const SEED_1 = 0x811c9dc5;
const SEED_2 = 0x9747b28c;

const FNV_PRIME = 0x01000193;

/**
 * The end of each hash: FNV-1a over UTF-16 code units from two seeds, then this avalanche so
 * that nearby strings spread.
 */
function avalanche(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}
