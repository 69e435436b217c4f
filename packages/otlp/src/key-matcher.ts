const encoder = new TextEncoder();
const decoder = new TextDecoder();

const matchers = new WeakMap<ReadonlySet<string>, KeyMatcher>();

/**
 * The matcher for `keys`, built once per set: every decoder made with the same set shares it
 * (building one encodes every key), and it holds nothing decoded from payloads. Like the
 * decoders, it assumes the set is not changed after it was first passed.
 */
export function keyMatcherFor(keys: ReadonlySet<string>): KeyMatcher {
  let matcher = matchers.get(keys);
  if (matcher === undefined) {
    matcher = new KeyMatcher(keys);
    matchers.set(keys, matcher);
  }
  return matcher;
}

/**
 * Matches attribute keys against a caller's key set on their UTF-8 bytes, so an unwanted
 * attribute costs a length check and at most a byte comparison: no string is built for its key,
 * no hash computed, no value decoded. Returns the caller's own string for a match.
 */
export class KeyMatcher {
  /** Candidates by UTF-8 byte length; most unwanted keys fail on length alone. */
  private readonly byLength: (readonly Candidate[] | undefined)[] = [];

  /** `groupOf` numbers each key for `find` (default: every key is group 0). */
  constructor(keys: ReadonlySet<string>, groupOf: (key: string) => number = () => 0) {
    for (const key of keys) {
      const bytes = encoder.encode(key);
      // A key with a lone surrogate has no UTF-8 form: its encoding (U+FFFD) would match the bytes
      // of a different key, so it can never match.
      if (decoder.decode(bytes) !== key) continue;
      const candidates = (this.byLength[bytes.length] ??= []) as Candidate[];
      candidates.push({
        bytes,
        view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        key,
        group: groupOf(key),
        last: bytes[bytes.length - 1] ?? 0,
        middle: bytes[bytes.length >>> 1] ?? 0,
      });
    }
  }

  /**
   * The key in the set whose UTF-8 form is `bytes[start, end)`, or undefined. `view` is a
   * DataView over the same bytes as `bytes` (the decoders have one; made here when not given).
   */
  match(
    bytes: Uint8Array,
    start: number,
    end: number,
    view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  ): string | undefined {
    return this.find(bytes, view, start, end)?.key;
  }

  /**
   * false when `bytes[start, end)` is surely no key of the set (its length, last or middle byte
   * rules it out); true when it may be one. What `find` checks first, without the comparison.
   */
  mayMatch(bytes: Uint8Array, start: number, end: number): boolean {
    const length = end - start;
    const candidates = length < this.byLength.length ? this.byLength[length] : undefined;
    if (candidates === undefined) return false;
    if (length === 0) return true;
    const last = bytes[end - 1]!;
    const middle = bytes[start + (length >>> 1)]!;
    for (let c = 0; c < candidates.length; c++) {
      const candidate = candidates[c]!;
      if (candidate.last === last && candidate.middle === middle) return true;
    }
    return false;
  }

  /** Like `match`, with the key's group. */
  find(bytes: Uint8Array, view: DataView, start: number, end: number): MatchedKey | undefined {
    const length = end - start;
    const candidates = length < this.byLength.length ? this.byLength[length] : undefined;
    if (candidates === undefined) return undefined;
    if (length === 0) return candidates[0];
    // Keys of one length often share a prefix (`http.request.…`, `http.response.…`): the last and
    // middle bytes reject most of them at once; the rest is compared four bytes at a time.
    const last = bytes[end - 1]!;
    const middle = bytes[start + (length >>> 1)]!;
    for (let c = 0; c < candidates.length; c++) {
      const candidate = candidates[c]!;
      if (candidate.last !== last || candidate.middle !== middle) continue;
      const expected = candidate.view;
      const words = length - 3;
      let i = 0;
      while (i < words && expected.getInt32(i) === view.getInt32(start + i)) i += 4;
      if (i < words) continue;
      while (i < length && candidate.bytes[i] === bytes[start + i]) i++;
      if (i === length) return candidate;
    }
    return undefined;
  }
}

export interface MatchedKey {
  readonly key: string;
  readonly group: number;
}

interface Candidate extends MatchedKey {
  readonly bytes: Uint8Array;
  readonly view: DataView;
  readonly last: number;
  readonly middle: number;
}
