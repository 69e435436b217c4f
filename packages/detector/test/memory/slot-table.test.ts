import { describe, expect, it } from 'vitest';
import { SlotTable } from '../../src/memory/slot-table.ts';

/** A small deterministic generator, so a failure replays. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('SlotTable', () => {
  it('answers like a Map through random adds, deletes and lookups', () => {
    const table = new SlotTable<number>();
    const reference = new Map<number, number>();
    const next = random(7);
    for (let step = 0; step < 200_000; step++) {
      const key = Math.floor(next() * 50_000);
      const roll = next();
      if (roll < 0.5) {
        if (!reference.has(key)) {
          table.add(key, step);
          reference.set(key, step);
        }
      } else if (roll < 0.8) {
        table.delete(key);
        reference.delete(key);
      } else {
        expect(table.get(key)).toBe(reference.get(key));
      }
    }
    expect(table.size).toBe(reference.size);
    for (const [key, value] of reference) expect(table.get(key)).toBe(value);
  });

  // The detector's slots are dense small integers; the coverage join keys its windows by them.
  it.each([10_000, 100_000, 1_000_000])('reads under two slots a lookup with %i dense keys', (entries) => {
    const table = new SlotTable<number>();
    for (let key = 0; key < entries; key++) table.add(key, key);
    expect(table.meanProbes()).toBeLessThan(2);
  });

  it.each([10_000, 100_000, 1_000_000])(
    'reads under two slots a lookup with %i scattered keys',
    (entries) => {
      const table = new SlotTable<number>();
      const next = random(entries);
      const added = new Set<number>();
      while (added.size < entries) {
        const key = Math.floor(next() * 0x7fff_ffff);
        if (added.has(key)) continue;
        added.add(key);
        table.add(key, key);
      }
      expect(table.meanProbes()).toBeLessThan(2);
    },
  );

  it('keeps probe runs short at a million entries after a million deletes and adds', () => {
    const table = new SlotTable<number>();
    for (let key = 0; key < 1_000_000; key++) table.add(key, key);
    // Slots are freed and handed to new keys as the detector evicts and admits keys.
    for (let key = 0; key < 1_000_000; key++) {
      table.delete(key);
      table.add(key + 1_000_000, key);
    }
    expect(table.size).toBe(1_000_000);
    expect(table.meanProbes()).toBeLessThan(2);
    expect(table.get(1_999_999)).toBe(999_999);
    expect(table.get(5)).toBeUndefined();
  });
});
