import { hexOf16 } from './hex.ts';

/**
 * Hex strings of recently seen trace ids, by their 16 bytes.
 *
 * A trace's spans reach keyscope together but not side by side: a Collector batches many
 * services' spans, grouped by resource, so one request's spans are spread over the payload (in
 * the bench's archive workload 71% of spans repeat a trace id seen earlier in their payload, 12%
 * the previous span's). A hit costs four word comparisons instead of building a 32-character
 * string, and gives every span of a trace the same string object, whose hash V8 then computes
 * once for every map keyed by trace id downstream.
 *
 * Direct-mapped on a hash of all four words (generators differ in which bytes vary), no chaining: a
 * collision costs one ordinary conversion, never a wrong string, because a hit compares all 16
 * bytes. One per decoder, like the string caches: bounded, and only an accelerator.
 */
export class TraceIdCache {
  private readonly slotMask: number;
  private readonly words: Int32Array;
  private readonly strings: string[];

  constructor(slots: number) {
    if ((slots & (slots - 1)) !== 0) throw new RangeError(`slots must be a power of two, received ${slots}`);
    this.slotMask = slots - 1;
    this.words = new Int32Array(slots * 4);
    this.strings = new Array<string>(slots).fill('');
  }

  /** The hex of the 16 bytes at `at` (`view` over the same bytes as `bytes`; bounds checked by the caller). */
  get(bytes: Uint8Array, view: DataView, at: number): string {
    const a = view.getInt32(at);
    const b = view.getInt32(at + 4);
    const c = view.getInt32(at + 8);
    const d = view.getInt32(at + 12);
    let hash = Math.imul(a ^ b, 0x9e3779b1) ^ Math.imul(c ^ d, 0x85ebca6b);
    hash ^= hash >>> 15;
    const slot = hash & this.slotMask;
    const words = this.words;
    const base = slot * 4;
    const cached = this.strings[slot]!;
    if (
      cached !== '' &&
      words[base] === a &&
      words[base + 1] === b &&
      words[base + 2] === c &&
      words[base + 3] === d
    ) {
      return cached;
    }
    const id = hexOf16(bytes, at);
    words[base] = a;
    words[base + 1] = b;
    words[base + 2] = c;
    words[base + 3] = d;
    this.strings[slot] = id;
    return id;
  }
}
