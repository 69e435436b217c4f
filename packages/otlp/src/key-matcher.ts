const encoder = new TextEncoder();
const decoder = new TextDecoder();

const matchers = new WeakMap<ReadonlySet<string>, KeyMatcher>();

/**
 * The matcher for `keys`, built once per set: callers pass the same set with every payload, and
 * building one encodes every key. Like the decoders' other caches, it assumes the set is not
 * changed after it was first passed.
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

  constructor(keys: ReadonlySet<string>) {
    for (const key of keys) {
      const bytes = encoder.encode(key);
      // A key with a lone surrogate has no UTF-8 form: its encoding (U+FFFD) would match the bytes
      // of a different key, so it can never match.
      if (decoder.decode(bytes) !== key) continue;
      const candidates = (this.byLength[bytes.length] ??= []) as Candidate[];
      candidates.push({
        bytes,
        key,
        last: bytes[bytes.length - 1] ?? 0,
        middle: bytes[bytes.length >>> 1] ?? 0,
      });
    }
  }

  /** The key in the set whose UTF-8 form is `bytes[start, end)`, or undefined. */
  match(bytes: Uint8Array, start: number, end: number): string | undefined {
    const length = end - start;
    const candidates = length < this.byLength.length ? this.byLength[length] : undefined;
    if (candidates === undefined) return undefined;
    if (length === 0) return candidates[0]!.key;
    // Keys of one length often share a prefix (`http.request.…`, `http.response.…`): the last and
    // middle bytes reject most of them at once, and the comparison runs from the end.
    const last = bytes[end - 1]!;
    const middle = bytes[start + (length >>> 1)]!;
    for (let c = 0; c < candidates.length; c++) {
      const candidate = candidates[c]!;
      if (candidate.last !== last || candidate.middle !== middle) continue;
      const expected = candidate.bytes;
      let i = length - 2;
      while (i >= 0 && expected[i] === bytes[start + i]) i--;
      if (i < 0) return candidate.key;
    }
    return undefined;
  }
}

interface Candidate {
  readonly bytes: Uint8Array;
  readonly key: string;
  readonly last: number;
  readonly middle: number;
}
