import { describe, expect, it } from 'vitest';
import { OTLP_UTF8 } from '../src/errors.ts';
import { StringCache } from '../src/string-cache.ts';
import { expectCode } from './support/expect-code.ts';

const encode = (text: string) => new TextEncoder().encode(text);
const get = (cache: StringCache, text: string | Uint8Array) => {
  const bytes = typeof text === 'string' ? encode(text) : text;
  return cache.get(bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0, bytes.length);
};

describe('StringCache', () => {
  it('returns the same string object for the same bytes', () => {
    const cache = new StringCache(64, 32);
    const first = get(cache, 'http.request.method');
    expect(first).toBe('http.request.method');
    expect(get(cache, 'http.request.method')).toBe(first);
  });

  it('never returns a wrong string when every key collides in one slot', () => {
    const cache = new StringCache(1, 32);
    const keys = [
      'http.route',
      'http.rout3',
      'a',
      'ab',
      'abcd',
      'abce',
      'x'.repeat(32),
      `${'x'.repeat(31)}y`,
      'é✓',
    ];
    for (let round = 0; round < 3; round++) for (const key of keys) expect(get(cache, key)).toBe(key);
  });

  it('decodes strings longer than its slots without caching them', () => {
    const cache = new StringCache(4, 8);
    const long = 'attribute.key.longer.than.eight';
    expect(get(cache, long)).toBe(long);
    expect(get(cache, '')).toBe('');
  });

  it('reads at an offset inside a larger buffer', () => {
    const cache = new StringCache(16, 32);
    const bytes = encode('__service.name__');
    const view = new DataView(bytes.buffer);
    expect(cache.get(bytes, view, 2, 14)).toBe('service.name');
    expect(cache.get(bytes, view, 2, 9)).toBe('service');
  });

  it('refuses invalid UTF-8 and does not cache it', () => {
    const cache = new StringCache(1, 32);
    expectCode(() => get(cache, Uint8Array.from([0x61, 0xff, 0x62, 0x63, 0x64])), OTLP_UTF8);
    expectCode(() => get(cache, Uint8Array.from([0x61, 0xff, 0x62, 0x63, 0x64])), OTLP_UTF8);
  });

  it('requires a power-of-two slot count', () => {
    expect(() => new StringCache(3, 8)).toThrow(RangeError);
  });
});
