import { describe, expect, it } from 'vitest';
import { hexOf } from '../src/hex.ts';
import { TraceIdCache } from '../src/trace-id-cache.ts';

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);

describe('TraceIdCache', () => {
  it('gives the hex of the id, and the same string object wherever the same id appears again', () => {
    const cache = new TraceIdCache(16);
    const payload = new Uint8Array(64);
    for (let i = 0; i < 16; i++) payload[3 + i] = payload[40 + i] = (i * 37 + 5) & 0xff;
    const first = cache.get(payload, view(payload), 3);
    expect(first).toBe(hexOf(payload, 3, 19));
    expect(cache.get(payload, view(payload), 40)).toBe(first);
  });

  it('never answers another id, even when every slot is taken by ids that differ in one byte', () => {
    const cache = new TraceIdCache(2);
    const ids = Array.from({ length: 50 }, (_, n) => {
      const id = new Uint8Array(16).fill(7);
      id[n % 16] = n;
      return id;
    });
    for (let round = 0; round < 2; round++) {
      for (const id of ids) expect(cache.get(id, view(id), 0)).toBe(hexOf(id));
    }
  });
});
