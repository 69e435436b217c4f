import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { AttemptTail, spanIdHash } from '../src/attempt-tail.ts';

const segmentsOf = (tail: AttemptTail, slot: number) => {
  const out: number[][] = [];
  tail.forEachSegment(slot, (rowId, start, length) => out.push([rowId, start, length]));
  return out;
};

describe('the attempt tail', () => {
  it("keeps each key's segments and span id hashes in order, interleaved with other keys'", () => {
    const tail = new AttemptTail();
    const a = tail.add('a', false);
    const b = tail.add('b', true);
    expect([tail.slotOf('a'), tail.slotOf('b'), tail.slotOf('c')]).toEqual([a, b, -1]);
    expect([tail.keyOf(b), tail.mayBeIndexed(a), tail.mayBeIndexed(b)]).toEqual(['b', false, true]);
    const first = server({ key: 'a' });
    expect(tail.addPending(a, first)).toBe(true);
    expect(tail.addPending(a, server({ key: 'a' }))).toBe(false);
    expect(tail.addPending(b, server({ key: 'b' }))).toBe(true);
    tail.written(a, 1, 1, 100);
    tail.written(b, 1, 101, 50);
    expect(tail.pending(a)).toBeUndefined();
    expect(tail.addPending(a, server({ key: 'a' }))).toBe(true);
    tail.written(a, 2, 1, 70);
    expect(segmentsOf(tail, a)).toEqual([
      [1, 1, 100],
      [2, 1, 70],
    ]);
    expect(segmentsOf(tail, b)).toEqual([[1, 101, 50]]);
    expect(tail.mayHoldWritten(a, spanIdHash(first.spanId))).toBe(true);
    expect(tail.mayHoldWritten(b, spanIdHash(first.spanId))).toBe(false);
    expect(tail.size).toBe(4);
    expect([...tail.keys()]).toEqual(['a', 'b']);
  });

  it('grows past its first room, and starts empty again after clear', () => {
    const tail = new AttemptTail();
    for (let round = 0; round < 2; round++) {
      // 3,000 keys, 3 segments and hashes each: past the 1,024 slots and ints each starts with.
      for (let i = 0; i < 3_000; i++) {
        const slot = tail.add(`k${i}`, i % 2 === 0);
        for (let s = 0; s < 3; s++) {
          tail.addSegment(slot, round * 10 + s, i, s);
          tail.addHash(slot, i * 3 + s);
        }
      }
      expect(tail.slotOf('k2999')).toBe(2_999);
      expect(segmentsOf(tail, tail.slotOf('k1234'))).toEqual([
        [round * 10, 1234, 0],
        [round * 10 + 1, 1234, 1],
        [round * 10 + 2, 1234, 2],
      ]);
      expect(tail.mayHoldWritten(tail.slotOf('k7'), 22)).toBe(true);
      expect(tail.mayHoldWritten(tail.slotOf('k7'), 24)).toBe(false);
      expect(tail.mayBeIndexed(tail.slotOf('k7'))).toBe(false);
      tail.clear();
      expect([tail.slotOf('k7'), tail.size, [...tail.keys()].length]).toEqual([-1, 0, 0]);
    }
  });

  it('hashes span ids as FNV-1a over their characters', () => {
    expect(spanIdHash('')).toBe(0x811c9dc5 | 0);
    expect(spanIdHash('00f067aa0ba902b7')).toBe(spanIdHash('00f067aa0ba902b7'));
    expect(spanIdHash('00f067aa0ba902b7')).not.toBe(spanIdHash('00f067aa0ba902b8'));
  });
});
