import type { DetectorStats } from '@keyscope/detector';
import { describe, expect, it } from 'vitest';
import { sumDetectorStats } from '../../src/kafka/detect-partitions.ts';

function stats(overrides: Partial<DetectorStats>): DetectorStats {
  return {
    keysInMemory: 0,
    suspectKeys: 0,
    attempts: 0,
    duplicateAttempts: 0,
    evictedKeys: 0,
    rebuiltKeys: 0,
    cappedAttempts: 0,
    hotKeys: 0,
    internedNames: 0,
    watermarkUnixMillis: 0,
    ...overrides,
  };
}

describe("a detect instance's detector stats", () => {
  it('add up its partitions, hot keys included, with the newest watermark', () => {
    const summed = sumDetectorStats([
      stats({ keysInMemory: 10, hotKeys: 1, cappedAttempts: 190_000, watermarkUnixMillis: 5_000 }),
      stats({ keysInMemory: 4, hotKeys: 2, cappedAttempts: 7, watermarkUnixMillis: 9_000 }),
    ]);
    expect(summed).toEqual(
      stats({ keysInMemory: 14, hotKeys: 3, cappedAttempts: 190_007, watermarkUnixMillis: 9_000 }),
    );
  });

  it('are all zero without a ready partition', () => {
    expect(sumDetectorStats([])).toEqual(stats({}));
  });
});
