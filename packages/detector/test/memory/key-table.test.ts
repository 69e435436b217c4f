import { describe, expect, it } from 'vitest';
import {
  KeyTable,
  OBSERVED_FIRST_AT_TIER,
  OBSERVED_SUSPECT,
  RETOUCH_MILLIS,
} from '../../src/memory/key-table.ts';

/** Whether `observe`'s answer says the key is suspect. */
const suspect = (observed: number) => (observed & OBSERVED_SUSPECT) !== 0;
/** Whether `observe`'s answer says the attempt landed at a tier the key had not reached. */
const firstAtTier = (observed: number) => (observed & OBSERVED_FIRST_AT_TIER) !== 0;

describe('KeyTable', () => {
  it('turns a key suspect at its second server attempt at one tier, not at its first', () => {
    const table = new KeyTable();
    const slot = table.add('k1');
    expect(suspect(table.observe(slot, 1000, -1, 7, 1, true))).toBe(false);
    expect(suspect(table.observe(slot, 1100, -1, 7, 1, false))).toBe(false);
    expect(suspect(table.observe(slot, 1200, -1, 7, 1, true))).toBe(true);
    expect(table.lastSeen('k1')).toBe(1200);
  });

  it('turns a key suspect when it lands on a second node, a second tenant or a third tier, and says when it first reaches a tier', () => {
    const table = new KeyTable();
    const node = table.add('node');
    table.observe(node, 0, -1, 1, 1, true);
    expect(suspect(table.observe(node, 0, -1, 1, 2, false))).toBe(true);
    const tenant = table.add('tenant');
    table.observe(tenant, 0, 5, -1, -1, false);
    expect(suspect(table.observe(tenant, 0, 6, -1, -1, false))).toBe(true);
    const tiers = table.add('tiers');
    expect(table.observe(tiers, 0, -1, 1, 1, true)).toBe(OBSERVED_FIRST_AT_TIER);
    expect(table.observe(tiers, 0, -1, 2, 1, true)).toBe(OBSERVED_FIRST_AT_TIER);
    expect(table.observe(tiers, 0, -1, 3, 1, true)).toBe(OBSERVED_FIRST_AT_TIER | OBSERVED_SUSPECT);
    expect(firstAtTier(table.observe(tiers, 0, -1, 1, 1, false))).toBe(false);
  });

  it('counts a key’s attempts up to maxAttemptsPerKey, and how many keys reached it', () => {
    const table = new KeyTable(3);
    const hot = table.add('hot');
    for (let i = 0; i < 5; i++) table.observe(hot, i, -1, -1, -1, false);
    const calm = table.add('calm');
    table.observe(calm, 0, -1, -1, -1, false);
    expect(table.attemptCount('hot')).toBe(3);
    expect(table.isCapped(hot)).toBe(true);
    expect(table.isCapped(calm)).toBe(false);
    expect(table.cappedKeys).toBe(1);
    table.delete('hot');
    expect(table.cappedKeys).toBe(0);
    const reused = table.add('next');
    expect(table.isCapped(reused)).toBe(false);
  });

  it('keeps keys in least-recently-touched order and reuses freed slots', () => {
    const table = new KeyTable();
    for (let i = 0; i < 3000; i++) table.observe(table.add(`k${i}`), i, -1, -1, -1, false);
    table.observe(table.add('later'), 2 * RETOUCH_MILLIS, -1, -1, -1, false);
    table.find('k0');
    expect([...table.keys()].slice(0, 2)).toEqual(['k1', 'k2']);
    expect([...table.keys()].at(-1)).toBe('k0');
    table.delete('k1');
    const reused = table.add('fresh');
    expect(reused).toBe(1);
    expect(suspect(table.observe(reused, 5, -1, 1, 1, true))).toBe(false);
    expect(table.size).toBe(3001);
  });

  it('leaves a key touched within a minute of its last attempt where it is', () => {
    const table = new KeyTable();
    table.observe(table.add('burst'), 0, -1, -1, -1, false);
    table.observe(table.add('other'), RETOUCH_MILLIS - 1, -1, -1, -1, false);
    table.find('burst');
    expect([...table.keys()]).toEqual(['burst', 'other']);
    table.observe(table.add('much later'), RETOUCH_MILLIS + 1, -1, -1, -1, false);
    table.find('burst');
    expect([...table.keys()]).toEqual(['other', 'much later', 'burst']);
  });
});
