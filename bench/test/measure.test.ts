import { describe, expect, it } from 'vitest';
import { median, pairedRatio, percentile } from '../measure.ts';

describe('percentile', () => {
  it('takes the nearest rank, whatever the order of the samples', () => {
    const samples = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(percentile(samples, 50)).toBe(5);
    expect(percentile(samples, 90)).toBe(9);
    expect(percentile(samples, 99)).toBe(10);
    expect(percentile(samples, 0)).toBe(1);
  });

  it('is NaN without samples', () => {
    expect(percentile([], 99)).toBeNaN();
  });
});

describe('median', () => {
  it('is the middle sample of an odd count', () => {
    expect(median([300, 100, 200, 500, 400])).toBe(300);
  });
});

describe('pairedRatio', () => {
  it('divides repetition by repetition, so one slow repetition of both sides cancels out', () => {
    // Repetition 3 ran under load: both sides are slow, their ratio is not.
    expect(pairedRatio([10, 10, 2, 10, 10], [2, 2, 0.4, 2, 2])).toBe(5);
  });

  it('refuses samples that are not paired', () => {
    expect(() => pairedRatio([1, 2], [1])).toThrow(RangeError);
  });
});
