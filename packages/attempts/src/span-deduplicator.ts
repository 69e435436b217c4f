/**
 * Recognises redelivered spans (exporters and collectors retry whole batches) by (trace id, span
 * id), so that a redelivery never looks like a second execution.
 *
 * Memory is bounded, so recognition is best effort: ids live in two generations, and when the
 * young one fills up it becomes the old one and the previous old one is dropped. At least the
 * `maxEntries / 2` most recent ids are always remembered, and never more than `maxEntries`. A
 * redelivery older than that window gets through; the detector ignores a repeated (trace id, span
 * id) within one key's state as well, so this stage only has to catch the common case cheaply.
 *
 * `extractAttempts` consults it only for spans that become attempts: spans without a key are never
 * remembered, so they cost nothing here.
 *
 * Ids outside the `Span` contract (not 32 + 16 hex characters, or an all-zero trace id) are never
 * remembered and never reported as duplicates: the decoders refuse such ids, and a false "duplicate" would hide an
 * execution, which is worse than letting a redelivery through.
 */
export interface SpanDeduplicator {
  /** Records the span's id; true when it had been recorded before (a redelivery). */
  seen(traceId: string, spanId: string): boolean;
  /** Ids currently remembered; never more than `maxEntries`. */
  readonly size: number;
}

export interface SpanDeduplicatorOptions {
  /**
   * At least 2. Memory grows with the ids remembered, up to 48 to 96 bytes per entry at the bound
   * (tables are powers of two, at most half full).
   */
  maxEntries: number;
}

/** At most about 13 MB: seconds to minutes of keyed spans even at high rates, enough for exporter retries. */
export const DEFAULT_DEDUPLICATOR_MAX_ENTRIES = 200_000;

/** A trace id (128 bits) and a span id (64 bits) as 32-bit words. */
const WORDS = 6;

export function createSpanDeduplicator(
  options: SpanDeduplicatorOptions = { maxEntries: DEFAULT_DEDUPLICATOR_MAX_ENTRIES },
): SpanDeduplicator {
  const { maxEntries } = options;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 2) {
    throw new RangeError(`maxEntries must be an integer of at least 2, received ${maxEntries}`);
  }
  const generationSize = Math.floor(maxEntries / 2);
  let young = new IdTable(generationSize);
  let old = new IdTable(generationSize);
  const id = new Uint32Array(WORDS);
  return {
    seen(traceId, spanId) {
      if (!parseIds(traceId, spanId, id) || isEmpty(id)) return false;
      // Ids are a fixed-size table of words rather than a Set of strings: no per-span string
      // allocation, no rehashing, nothing for the garbage collector to trace.
      const hash = hashOf(id);
      const found = young.find(id, hash);
      if (found >= 0 || old.find(id, hash) >= 0) return true;
      young.insertAt(-1 - found, id, hash);
      if (young.size >= generationSize) {
        const dropped = old;
        old = young;
        young = dropped;
        young.clear();
      }
      return false;
    },
    get size() {
      return young.size + old.size;
    },
  };
}

/**
 * Open addressing with linear probing, at most half full, so probes stay short. A slot whose
 * trace id words are all zero is free: the OTLP spec makes an all-zero trace id invalid, and
 * `seen` never stores one. The table starts small and doubles as it fills, up to what `entries`
 * needs: a quiet pipeline never holds the bound's memory, and no large allocation lands at once.
 */
class IdTable {
  size = 0;
  private mask: number;
  private words: Uint32Array;
  private readonly maxCapacity: number;

  constructor(entries: number) {
    let capacity = 2;
    while (capacity < entries * 2) capacity *= 2;
    this.maxCapacity = capacity;
    const initial = Math.min(capacity, INITIAL_CAPACITY);
    this.mask = initial - 1;
    this.words = new Uint32Array(initial * WORDS);
  }

  /** The slot holding `id`, or `-1 - slot` for the free slot where it would go. */
  find(id: Uint32Array, hash: number): number {
    const { words, mask } = this;
    let slot = hash & mask;
    for (;;) {
      const base = slot * WORDS;
      const w0 = words[base]!;
      const w1 = words[base + 1]!;
      const w2 = words[base + 2]!;
      const w3 = words[base + 3]!;
      if ((w0 | w1 | w2 | w3) === 0) return -1 - slot;
      if (
        words[base + 5] === id[5] &&
        words[base + 4] === id[4] &&
        w3 === id[3] &&
        w2 === id[2] &&
        w1 === id[1] &&
        w0 === id[0]
      ) {
        return slot;
      }
      slot = (slot + 1) & mask;
    }
  }

  /** `slot` must come from `find(id, hash)` with no insertion in between. */
  insertAt(slot: number, id: Uint32Array, hash: number): void {
    if ((this.size + 1) * 2 > this.mask + 1 && this.mask + 1 < this.maxCapacity) {
      this.grow();
      slot = -1 - this.find(id, hash);
    }
    const words = this.words;
    const base = slot * WORDS;
    for (let i = 0; i < WORDS; i++) words[base + i] = id[i]!;
    this.size++;
  }

  clear(): void {
    this.words.fill(0);
    this.size = 0;
  }

  private grow(): void {
    const old = this.words;
    const capacity = (this.mask + 1) * 2;
    const words = new Uint32Array(capacity * WORDS);
    const mask = capacity - 1;
    const id = new Uint32Array(WORDS);
    for (let base = 0; base < old.length; base += WORDS) {
      if ((old[base]! | old[base + 1]! | old[base + 2]! | old[base + 3]!) === 0) continue;
      for (let i = 0; i < WORDS; i++) id[i] = old[base + i]!;
      let slot = hashOf(id) & mask;
      while (
        (words[slot * WORDS]! |
          words[slot * WORDS + 1]! |
          words[slot * WORDS + 2]! |
          words[slot * WORDS + 3]!) !==
        0
      ) {
        slot = (slot + 1) & mask;
      }
      words.set(id, slot * WORDS);
    }
    this.words = words;
    this.mask = mask;
  }
}

/** Slots a table starts with; it doubles from there. */
const INITIAL_CAPACITY = 1024;

function isEmpty(id: Uint32Array): boolean {
  return (id[0]! | id[1]! | id[2]! | id[3]!) === 0;
}

/** Mixes every word, so sequential ids (tests, simulators) spread as well as random ones. */
function hashOf(id: Uint32Array): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < WORDS; i++) hash = Math.imul(hash ^ id[i]!, 0x9e3779b1);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/** false when an id is not hex of the right length. */
function parseIds(traceId: string, spanId: string, into: Uint32Array): boolean {
  if (traceId.length !== 32 || spanId.length !== 16) return false;
  return (
    parseWord(traceId, 0, into, 0) &&
    parseWord(traceId, 8, into, 1) &&
    parseWord(traceId, 16, into, 2) &&
    parseWord(traceId, 24, into, 3) &&
    parseWord(spanId, 0, into, 4) &&
    parseWord(spanId, 8, into, 5)
  );
}

/** Hex digit values by character code; -1 for anything that is not a hex digit. */
const HEX_DIGITS = new Int8Array(128).fill(-1);
for (let digit = 0; digit < 16; digit++) {
  HEX_DIGITS[digit.toString(16).charCodeAt(0)] = digit;
  HEX_DIGITS[digit.toString(16).toUpperCase().charCodeAt(0)] = digit;
}

function parseWord(text: string, offset: number, into: Uint32Array, word: number): boolean {
  let value = 0;
  let invalid = 0;
  for (let i = offset; i < offset + 8; i++) {
    const code = text.charCodeAt(i);
    // A non-hex character sets the sign bit (digit -1), a non-ASCII one a bit above 15, so one
    // branch after the loop covers every bad character.
    const digit = HEX_DIGITS[code & 127]!;
    invalid |= digit | (code & ~127);
    value = (value << 4) | (digit & 15);
  }
  if (invalid < 0 || invalid > 15) return false;
  into[word] = value;
  return true;
}
