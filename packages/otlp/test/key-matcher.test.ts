import { describe, expect, it } from 'vitest';
import { KeyMatcher, keyMatcherFor } from '../src/key-matcher.ts';

const match = (matcher: KeyMatcher, key: string | Uint8Array) => {
  const bytes = typeof key === 'string' ? new TextEncoder().encode(key) : key;
  const padded = new Uint8Array(bytes.length + 6);
  padded.set(bytes, 3);
  return matcher.match(padded, 3, 3 + bytes.length);
};

describe('KeyMatcher', () => {
  const keys = new Set(['idempotency.key', 'idempotency.outcome', 'tenant.id', 'ünï', '']);
  const matcher = new KeyMatcher(keys);

  it("returns the set's own string for a key in the set", () => {
    for (const key of keys) expect(match(matcher, key)).toBe(key);
  });

  it('returns undefined for keys of the same length or prefix that are not in the set', () => {
    expect(match(matcher, 'idempotency.kez')).toBeUndefined();
    expect(match(matcher, 'idempotencx.key')).toBeUndefined();
    expect(match(matcher, 'Idempotency.key')).toBeUndefined();
    expect(match(matcher, 'idempotency')).toBeUndefined();
    expect(match(matcher, 'idempotency.keys')).toBeUndefined();
    expect(match(matcher, 'x'.repeat(10_000))).toBeUndefined();
  });

  it('never matches invalid UTF-8, nor a key with a lone surrogate', () => {
    const withSurrogate = new KeyMatcher(new Set(['\ud800']));
    expect(match(withSurrogate, Uint8Array.from([0xef, 0xbf, 0xbd]))).toBeUndefined();
    expect(match(matcher, Uint8Array.from([0xff]))).toBeUndefined();
  });

  it('pre-checks keys without comparing them: never false for a key in the set', () => {
    const mayMatch = (key: string) => {
      const bytes = new TextEncoder().encode(key);
      return matcher.mayMatch(bytes, 0, bytes.length);
    };
    for (const key of keys) expect(mayMatch(key)).toBe(true);
    expect(mayMatch('idempotency.kez')).toBe(false);
    expect(mayMatch('idempotency')).toBe(false);
    // Same length, last and middle byte: only the full comparison of `match` tells them apart.
    expect(mayMatch('Idempotency.key')).toBe(true);
    expect(match(matcher, 'Idempotency.key')).toBeUndefined();
  });

  it('builds one matcher per key set, however many payloads use it', () => {
    const set = new Set(['a.key']);
    expect(keyMatcherFor(set)).toBe(keyMatcherFor(set));
    expect(keyMatcherFor(new Set(['a.key']))).not.toBe(keyMatcherFor(set));
    expect(match(keyMatcherFor(set), 'a.key')).toBe('a.key');
  });
});
