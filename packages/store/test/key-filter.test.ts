import { describe, expect, it } from 'vitest';
import { KeyFilter } from '../src/key-filter.ts';

describe('the key filter', () => {
  it('holds every key added to it, also past its capacity', () => {
    const filter = new KeyFilter(10_000);
    const keys = Array.from({ length: 30_000 }, (_, i) => `7f3c${i.toString(16)}-payment-${i * 7919}`);
    for (const key of keys) filter.add(key);
    expect(keys.every((key) => filter.mayContain(key))).toBe(true);
    expect(filter.size).toBe(30_000);
  });

  it('answers about 1% of absent keys wrongly while it holds no more than its capacity', () => {
    const filter = new KeyFilter(50_000);
    for (let i = 0; i < 50_000; i++) filter.add(`idem-${i}`);
    let wrong = 0;
    for (let i = 0; i < 100_000; i++) if (filter.mayContain(`other-${i}`)) wrong++;
    expect(wrong / 100_000).toBeLessThan(0.02);
  });

  it('holds nothing when new', () => {
    const filter = new KeyFilter(1);
    expect(filter.capacity).toBe(1024);
    expect(['', 'k1', 'payment-1'].some((key) => filter.mayContain(key))).toBe(false);
  });
});
