import { describe, expect, it } from 'vitest';
import { backoffOf, parseRetryAfter, retryCeilingMillis, retryDelayMillis } from '../src/retry-backoff.ts';

const OPTIONS = { retryBaseMillis: 1_000, retryCapMillis: 30_000 };

describe('retry backoff', () => {
  it('doubles the ceiling with every failure up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 500].map((n) => retryCeilingMillis(n, OPTIONS))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it('draws the wait uniformly between zero and the ceiling', () => {
    expect(retryDelayMillis(3, OPTIONS, () => 0)).toBe(0);
    expect(retryDelayMillis(3, OPTIONS, () => 0.25)).toBe(2_000);
    expect(retryDelayMillis(3, OPTIONS, () => 0.9999)).toBeLessThan(8_000);
  });
});

describe('backoffOf', () => {
  const config = { retryBaseMillis: 1_000, retryCapMillis: 300_000, criticalRetryCapMillis: 15_000 };

  it('caps a critical page’s waits at the critical cap and the others’ at the cap', () => {
    const ceilings = (severity: 'critical' | 'high' | 'warning') =>
      [0, 3, 4, 5, 9, 40].map((n) => retryCeilingMillis(n, backoffOf(severity, config)));
    expect(ceilings('critical')).toEqual([1_000, 8_000, 15_000, 15_000, 15_000, 15_000]);
    expect(ceilings('high')).toEqual([1_000, 8_000, 16_000, 32_000, 300_000, 300_000]);
    expect(ceilings('warning')).toEqual(ceilings('high'));
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 5, 1, 12);

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
  });

  it('reads an HTTP date, and a date in the past as no wait', () => {
    expect(parseRetryAfter(new Date(now + 5_000).toUTCString(), now)).toBe(5_000);
    expect(parseRetryAfter(new Date(now - 5_000).toUTCString(), now)).toBe(0);
  });

  it('ignores an absent or unreadable header', () => {
    expect(parseRetryAfter(null, now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('-5', now)).toBeNull();
  });
});
