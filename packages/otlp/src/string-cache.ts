import { decodeUtf8 } from './utf8.ts';

/**
 * A direct-mapped cache from UTF-8 bytes to the string decoded from them.
 *
 * Attribute keys (and many values: methods, routes, service names) repeat in every span of every
 * batch. Returning the same string object for the same bytes skips building a new string, and
 * because V8 internalizes a string the first time it becomes a property key, later spans insert
 * the cached key without hashing it again. One slot per hash, no chaining: a collision costs one
 * ordinary decode, never a wrong string, because a hit compares every byte.
 *
 * Each protobuf decoder has its own instances, which live as long as it does: they hold at most
 * `slots × maxBytes` bytes and `slots` strings, and they are only an accelerator: correctness
 * never depends on their contents.
 */
export class StringCache {
  private readonly slotMask: number;
  private readonly maxBytes: number;
  private readonly lengths: Int32Array;
  private readonly stored: Uint8Array;
  private readonly storedView: DataView;
  private readonly strings: string[];

  constructor(slots: number, maxBytes: number) {
    if ((slots & (slots - 1)) !== 0) throw new RangeError(`slots must be a power of two, received ${slots}`);
    this.slotMask = slots - 1;
    this.maxBytes = maxBytes;
    this.lengths = new Int32Array(slots).fill(-1);
    this.stored = new Uint8Array(slots * maxBytes);
    this.storedView = new DataView(this.stored.buffer);
    this.strings = new Array<string>(slots).fill('');
  }

  /** The strict UTF-8 decoding of `bytes[start, end)`, from the cache when it is there. */
  get(bytes: Uint8Array, view: DataView, start: number, end: number): string {
    const length = end - start;
    if (length > this.maxBytes || length === 0) return decodeUtf8(bytes, start, end);
    // O(1) whatever the length: the first and last four bytes (two reads through the DataView) and
    // the length; names such as `http.request.method` and `http.response.status_code` already
    // differ in length or in them. Shorter strings mix their first and last byte.
    const hash =
      length >= 4
        ? Math.imul(length ^ view.getInt32(start), 0x9e3779b1) ^ Math.imul(view.getInt32(end - 4), 0x85ebca6b)
        : Math.imul(length, 0x9e3779b1) ^ Math.imul(bytes[start]! | (bytes[end - 1]! << 8), 0x85ebca6b);
    const slot = (hash ^ (hash >>> 15)) & this.slotMask;
    const stored = this.stored;
    const base = slot * this.maxBytes;
    if (this.lengths[slot] === length) {
      // Four bytes per step through DataViews: the byte-by-byte loop dominated decoding time.
      const storedView = this.storedView;
      let i = 0;
      const words = length - 3;
      while (i < words && storedView.getInt32(base + i) === view.getInt32(start + i)) i += 4;
      if (i >= words) {
        while (i < length && stored[base + i] === bytes[start + i]) i++;
        if (i === length) return this.strings[slot]!;
      }
    }
    const text = decodeUtf8(bytes, start, end);
    for (let i = 0; i < length; i++) stored[base + i] = bytes[start + i]!;
    this.lengths[slot] = length;
    this.strings[slot] = text;
    return text;
  }
}
