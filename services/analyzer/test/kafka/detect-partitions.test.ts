import type { DetectorStats } from '@keyscope/detector';
import { describe, expect, it } from 'vitest';
import { sumDetectorStats } from '../../src/kafka/detect-partitions.ts';

/** Zero stats with `overrides`: the sum of no partitions is all zeros (the second test). */
function stats(overrides: Partial<DetectorStats>): DetectorStats {
  return { ...sumDetectorStats([]), ...overrides };
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
    const zero = sumDetectorStats([]);
    expect(Object.values(zero).every((value) => value === 0)).toBe(true);
    expect(Object.keys(zero).sort()).toEqual(
      [
        'keysInMemory',
        'suspectKeys',
        'attempts',
        'duplicateAttempts',
        'evictedKeys',
        'rebuiltKeys',
        'cappedAttempts',
        'hotKeys',
        'findingStoresLeftOut',
        'findingNodesLeftOut',
        'incidentStoresLeftOut',
        'incidentNodesLeftOut',
        'internedNames',
        'coverageEntries',
        'coverageEvictedEntries',
        'tiers',
        'tierOverflowAttempts',
        'routingFollowUpKeys',
        'routingFollowUpDropped',
        'regroupedKeys',
        'watermarkUnixMillis',
      ].sort(),
    );
  });
});
