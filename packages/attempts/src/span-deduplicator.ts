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
 * Ids outside the `Span` contract (not 32 + 16 hex characters) are never remembered and never
 * reported as duplicates: the decoders refuse such ids, and a false "duplicate" would hide an
 * execution, which is worse than letting a redelivery through.
 */
export interface SpanDeduplicator {
  /** Records the span's id; true when it had been recorded before (a redelivery). */
  seen(traceId: string, spanId: string): boolean;
  /** Ids currently remembered; never more than `maxEntries`. */
  readonly size: number;
}

export interface SpanDeduplicatorOptions {
  /** At least 2. Memory is allocated up front: 50 to 100 bytes per entry (tables are powers of two). */
  maxEntries: number;
}

/** About 13 MB: seconds to minutes of keyed spans even at high rates, enough for exporter retries. */
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
      if (!parseIds(traceId, spanId, id)) return false;
      // Ids are a fixed-size table of words rather than a Set of strings: no per-span string
      // allocation, no rehashing, nothing for the garbage collector to trace.
      const hash = hashOf(id);
      const found = young.find(id, hash);
      if (found >= 0 || old.find(id, hash) >= 0) return true;
      young.insertAt(-1 - found, id);
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

/** Open addressing with linear probing, at most half full, so probes stay short. */
class IdTable {
  size = 0;
  private readonly mask: number;
  private readonly words: Uint32Array;
  private readonly used: Uint8Array;

  constructor(entries: number) {
    let capacity = 2;
    while (capacity < entries * 2) capacity *= 2;
    this.mask = capacity - 1;
    this.words = new Uint32Array(capacity * WORDS);
    this.used = new Uint8Array(capacity);
  }

  /** The slot holding `id`, or `-1 - slot` for the free slot where it would go. */
  find(id: Uint32Array, hash: number): number {
    const { words, used, mask } = this;
    let slot = hash & mask;
    while (used[slot] === 1) {
      const base = slot * WORDS;
      if (
        words[base + 5] === id[5] &&
        words[base + 4] === id[4] &&
        words[base + 3] === id[3] &&
        words[base + 2] === id[2] &&
        words[base + 1] === id[1] &&
        words[base] === id[0]
      ) {
        return slot;
      }
      slot = (slot + 1) & mask;
    }
    return -1 - slot;
  }

  /** `slot` must come from `find` with no insertion in between. */
  insertAt(slot: number, id: Uint32Array): void {
    const words = this.words;
    const base = slot * WORDS;
    words[base] = id[0]!;
    words[base + 1] = id[1]!;
    words[base + 2] = id[2]!;
    words[base + 3] = id[3]!;
    words[base + 4] = id[4]!;
    words[base + 5] = id[5]!;
    this.used[slot] = 1;
    this.size++;
  }

  clear(): void {
    this.used.fill(0);
    this.size = 0;
  }
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
