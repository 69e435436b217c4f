import { describe, expect, it } from 'vitest';
import { windowRates } from '../kafka-role-runs.ts';

describe('windowRates', () => {
  it('gives the progress per second of equal shares when marks fall on their ends', () => {
    const marks = [
      { atMillis: 1_000, progress: 0 },
      { atMillis: 2_000, progress: 100 },
      { atMillis: 2_500, progress: 200 },
    ];
    expect(windowRates(marks, 2)).toEqual([100, 200]);
  });

  it('spreads a batch counted at one mark evenly over the time since the mark before', () => {
    // 300 counted at once after 3 s: each third of it took one second.
    const marks = [
      { atMillis: 0, progress: 0 },
      { atMillis: 3_000, progress: 300 },
    ];
    expect(windowRates(marks, 3)).toEqual([100, 100, 100]);
  });

  it('ends the last window at the last mark even when the progress stopped moving before it', () => {
    const marks = [
      { atMillis: 0, progress: 0 },
      { atMillis: 1_000, progress: 100 },
      { atMillis: 2_000, progress: 200 },
      { atMillis: 4_000, progress: 200 },
    ];
    expect(windowRates(marks, 2)).toEqual([100, 100 / 3]);
  });

  it('refuses a run that made no progress', () => {
    expect(() => windowRates([{ atMillis: 0, progress: 0 }], 2)).toThrow(RangeError);
  });
});
