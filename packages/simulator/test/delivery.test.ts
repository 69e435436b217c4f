import { describe, expect, it } from 'vitest';
import { duplicateSome, scenarios, shuffle, simulate, splitIntoPayloads } from '../src/index.ts';

const { spans } = simulate(scenarios.slowTail({ requests: 100 }));
const ids = (list: typeof spans) => list.map((s) => s.traceId + s.spanId);

describe('shuffle', () => {
  it('permutes the spans reproducibly by seed', () => {
    const a = shuffle(spans, 1);
    expect(ids(a)).not.toEqual(ids(spans));
    expect([...ids(a)].sort()).toEqual([...ids(spans)].sort());
    expect(ids(shuffle(spans, 1))).toEqual(ids(a));
    expect(ids(shuffle(spans, 2))).not.toEqual(ids(a));
  });
});

describe('duplicateSome', () => {
  it('appends equal copies with the same trace and span ids after the originals', () => {
    const out = duplicateSome(spans, 0.1, 3);
    const copies = out.slice(spans.length);
    expect(out.slice(0, spans.length)).toEqual(spans);
    expect(copies.length).toBeGreaterThan(spans.length * 0.07);
    expect(copies.length).toBeLessThan(spans.length * 0.13);
    const originals = new Map(spans.map((s) => [s.traceId + s.spanId, s]));
    for (const copy of copies) {
      const original = originals.get(copy.traceId + copy.spanId)!;
      expect(copy).toEqual(original);
      expect(copy).not.toBe(original);
    }
  });
});

describe('splitIntoPayloads', () => {
  it('cuts the spans in order into the requested number of non-empty payloads', () => {
    const payloads = splitIntoPayloads(spans, 17, 4);
    expect(payloads).toHaveLength(17);
    expect(payloads.every((p) => p.length > 0)).toBe(true);
    expect(payloads.flat()).toEqual(spans);
    expect(new Set(payloads.map((p) => p.length)).size).toBeGreaterThan(1);
  });

  it('pads with empty payloads when there are fewer spans than payloads', () => {
    const payloads = splitIntoPayloads(spans.slice(0, 2), 4, 1);
    expect(payloads.map((p) => p.length)).toEqual([1, 1, 0, 0]);
  });
});
