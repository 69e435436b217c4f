import { prng } from '@keyscope/otlp/testing';
import { describe, expect, it } from 'vitest';
import { ActiveBuckets } from '../../src/routing/active-buckets.ts';
import {
  dropRunsBelow,
  extendRuns,
  type Run,
  type RunCondition,
  reopenRuns,
  trimFirstRun,
} from '../../src/routing/runs.ts';

/** Active buckets at `indexes` (ascending), one span each. */
function bucketsAt(indexes: readonly number[]): ActiveBuckets {
  const buckets = new ActiveBuckets({ bucketReads: 0 });
  for (const index of indexes) buckets.add(index, 1, 0);
  return buckets;
}

/** A condition that holds at the buckets whose index is in `holding`, and records the growth it sees. */
function holdingAt(buckets: ActiveBuckets, holding: readonly number[]) {
  const grown: [first: number, to: number][] = [];
  const cut: number[] = [];
  const condition: RunCondition<Run> = {
    holdsAt: (position) => holding.includes(buckets.indexAt(position)),
    start: (index) => ({ first: index, last: index }),
    grow: (run, position) => {
      grown.push([run.first, buckets.indexAt(position)]);
    },
    cutBack: (run) => {
      cut.push(run.first);
    },
  };
  return { condition, grown, cut };
}

/** The runs of reading `buckets` from their first. */
function runsOf(buckets: ActiveBuckets, holding: readonly number[], maxStep: number): Run[] {
  const runs: Run[] = [];
  extendRuns(runs, buckets, 0, buckets.size, maxStep, holdingAt(buckets, holding).condition);
  return runs;
}

describe('extendRuns', () => {
  it('joins holding buckets at most the step apart into one run, and starts another past it', () => {
    const buckets = bucketsAt([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(runsOf(buckets, [1, 2, 4, 9, 10], 2)).toEqual([
      { first: 1, last: 4 },
      { first: 9, last: 10 },
    ]);
  });

  it('measures the step in bucket indexes, not in active buckets between', () => {
    // Buckets 0 and 5 are neighbours among the active ones, five indexes apart.
    const buckets = bucketsAt([0, 5]);
    expect(runsOf(buckets, [0, 5], 4)).toEqual([
      { first: 0, last: 0 },
      { first: 5, last: 5 },
    ]);
    expect(runsOf(buckets, [0, 5], 5)).toEqual([{ first: 0, last: 5 }]);
  });

  it('tells the condition each bucket a run grows to, before the run ends there', () => {
    const buckets = bucketsAt([1, 2, 3, 4, 8]);
    const { condition, grown } = holdingAt(buckets, [1, 3, 4, 8]);
    const runs: Run[] = [];
    extendRuns(runs, buckets, 0, buckets.size, 2, condition);
    expect(runs).toEqual([
      { first: 1, last: 4 },
      { first: 8, last: 8 },
    ]);
    expect(grown).toEqual([
      [1, 3],
      [1, 4],
    ]);
  });

  it('continues the last run given when a holding bucket follows within the step', () => {
    const buckets = bucketsAt([1, 2, 3, 4, 5, 6]);
    const runs: Run[] = [{ first: 1, last: 2 }];
    extendRuns(runs, buckets, buckets.lowerBound(4), buckets.size, 2, holdingAt(buckets, [4, 5]).condition);
    expect(runs).toEqual([{ first: 1, last: 5 }]);
  });
});

describe('reopenRuns', () => {
  it('drops the runs starting at or after `from` and cuts the one across it back to its last holding bucket before', () => {
    const buckets = bucketsAt([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const holding = [1, 2, 4, 5, 6, 11, 12];
    const runs = runsOf(buckets, holding, 1);
    expect(runs).toEqual([
      { first: 1, last: 2 },
      { first: 4, last: 6 },
      { first: 11, last: 12 },
    ]);
    const { condition, cut } = holdingAt(buckets, holding);
    // Read again from 6 with a step of 1: run 4–6 ends at 5 and bucket 6 may join it again.
    expect(reopenRuns(runs, buckets, 6, 1, condition)).toBe(1);
    expect(runs).toEqual([
      { first: 1, last: 2 },
      { first: 4, last: 5 },
    ]);
    expect(cut).toEqual([4]);
  });

  it('judges no kept run again when the buckets read again lie past the step from its end', () => {
    const buckets = bucketsAt([1, 2, 3, 4, 5, 6, 7, 8]);
    const holding = [1, 2];
    const runs = runsOf(buckets, holding, 2);
    const { condition, cut } = holdingAt(buckets, holding);
    expect(reopenRuns(runs, buckets, 6, 2, condition)).toBe(1);
    expect(runs).toEqual([{ first: 1, last: 2 }]);
    expect(cut).toEqual([]);
    // From 4 on, bucket 4 is within the step of 2: the run is open again.
    expect(reopenRuns(runs, buckets, 4, 2, condition)).toBe(0);
  });

  it('finds, reading again from any bucket, the runs of reading from the first, and judges again every run that may change', () => {
    const random = prng(7);
    for (let trial = 0; trial < 200; trial++) {
      const indexes: number[] = [];
      for (let index = 0; index < 40; index++) if (random() < 0.7) indexes.push(index);
      const holding = indexes.filter(() => random() < 0.5);
      const maxStep = 1 + Math.floor(random() * 4);
      const buckets = bucketsAt(indexes);
      const whole = runsOf(buckets, holding, maxStep);
      for (let from = -1; from <= 41; from++) {
        const runs = whole.map((run) => ({ ...run }));
        const { condition } = holdingAt(buckets, holding);
        const judgeFrom = reopenRuns(runs, buckets, from, maxStep, condition);
        // The runs before `judgeFrom` are final: reading on changes only those from it on.
        expect(runs.slice(0, judgeFrom), `trial ${trial}, from ${from}`).toEqual(whole.slice(0, judgeFrom));
        extendRuns(runs, buckets, buckets.lowerBound(from), buckets.size, maxStep, condition);
        expect(runs, `trial ${trial}, from ${from}`).toEqual(whole);
      }
    }
  });
});

describe('dropRunsBelow and trimFirstRun', () => {
  it('drops the runs ending below the cutoff and starts the one across it at its first holding bucket kept', () => {
    const buckets = bucketsAt([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const holding = [1, 2, 4, 5, 7, 9];
    const runs = runsOf(buckets, holding, 1);
    expect(runs).toEqual([
      { first: 1, last: 2 },
      { first: 4, last: 5 },
      { first: 7, last: 7 },
      { first: 9, last: 9 },
    ]);
    buckets.dropBelow(5, () => {});
    dropRunsBelow(runs, 5);
    expect(trimFirstRun(runs, buckets, 5, holdingAt(buckets, holding).condition)).toBe(true);
    expect(runs).toEqual([
      { first: 5, last: 5 },
      { first: 7, last: 7 },
      { first: 9, last: 9 },
    ]);
    // A first run that starts at or after the cutoff is left as it was.
    expect(trimFirstRun(runs, buckets, 5, holdingAt(buckets, holding).condition)).toBe(false);
  });
});
