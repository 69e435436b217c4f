import { describe, expect, it } from 'vitest';
import { NumberColumn } from '../../src/routing/number-column.ts';

describe('NumberColumn', () => {
  it('keeps a number per bucket, zero included, and none for a bucket never set', () => {
    const column = new NumberColumn();
    column.set(1_700_000_000, 7);
    column.set(1_700_000_001, 0);
    column.set(1_700_000_000, 9);

    expect(column.get(1_700_000_000)).toBe(9);
    expect(column.get(1_700_000_001)).toBe(0);
    expect(column.get(1_700_000_002)).toBeUndefined();
    expect(column.get(1_800_000_000)).toBeUndefined();
  });

  it('forgets deleted buckets, across chunks, and takes a bucket set again after its delete', () => {
    const column = new NumberColumn();
    for (let index = 0; index < 200; index++) column.set(index, index * 2);
    for (let index = 0; index < 130; index++) column.delete(index);
    column.delete(5);

    expect(column.get(0)).toBeUndefined();
    expect(column.get(129)).toBeUndefined();
    expect(column.get(130)).toBe(260);
    column.set(3, 1);
    expect(column.get(3)).toBe(1);
    expect(column.get(4)).toBeUndefined();
  });

  it('keeps negative bucket indexes apart from positive ones', () => {
    const column = new NumberColumn();
    column.set(-1, 1);
    column.set(63, 2);

    expect(column.get(-1)).toBe(1);
    expect(column.get(63)).toBe(2);
    expect(column.get(-65)).toBeUndefined();
  });
});
