import type { ActiveBuckets } from './active-buckets.ts';

/** A run: a node's active buckets where a condition held, each at most a step after the one before. */
export interface Run {
  /** Index of the run's first bucket. */
  first: number;
  /** Index of the run's last bucket. */
  last: number;
}

/**
 * The condition a run is made of, at a node's active buckets (by position, see `ActiveBuckets`),
 * and what a run keeps of its buckets as it is found (a slowdown sums their histograms). Created
 * once per node with the finder it serves: inference runs every tick, so nothing here is allocated
 * per call or per bucket but the runs themselves.
 */
export interface RunCondition<R extends Run> {
  /** Whether the condition holds at the active bucket at `position`. */
  holdsAt(position: number): boolean;
  /** A run of the one bucket at `position`, whose index is `index`. */
  start(index: number, position: number): R;
  /**
   * `run` takes in the buckets after its last up to the one at `position`; called before its
   * `last` moves there.
   */
  grow(run: R, position: number): void;
  /** `run` lost buckets at its end: whatever it kept of them no longer holds. */
  cutBack(run: R): void;
}

/**
 * Readies `runs` (ascending, found below the last inference's closed edge) for the buckets from
 * index `from` on to be read again: drops the runs that start there or later and cuts the one that
 * reaches across `from` back to its last bucket below it where the condition holds (its buckets lie
 * at most `maxStep` apart, so this walks back that far at most). Returns the position in `runs` of
 * the first run to judge again: the last one kept if a bucket from `from` on may still join it
 * (within `maxStep`), else `runs.length`.
 */
export function reopenRuns<R extends Run>(
  runs: R[],
  buckets: ActiveBuckets,
  from: number,
  maxStep: number,
  condition: RunCondition<R>,
): number {
  while (runs.length > 0 && runs[runs.length - 1]!.first >= from) runs.pop();
  const open = runs[runs.length - 1];
  if (open === undefined) return runs.length;
  if (open.last >= from) {
    let at = buckets.lowerBound(from) - 1;
    while (!condition.holdsAt(at)) at--;
    open.last = buckets.indexAt(at);
    condition.cutBack(open);
  }
  return from - open.last <= maxStep ? runs.length - 1 : runs.length;
}

/**
 * Adds to `runs` the active buckets at positions `from` (inclusive) to `to` (exclusive) where the
 * condition holds: one at most `maxStep` (by index) after the last run's last bucket grows that run
 * (a short stretch where it does not hold inside a run does not split it); one further on starts a
 * run.
 */
export function extendRuns<R extends Run>(
  runs: R[],
  buckets: ActiveBuckets,
  from: number,
  to: number,
  maxStep: number,
  condition: RunCondition<R>,
): void {
  for (let at = from; at < to; at++) {
    if (!condition.holdsAt(at)) continue;
    const index = buckets.indexAt(at);
    const last = runs[runs.length - 1];
    if (last !== undefined && index - last.last <= maxStep) {
      condition.grow(last, at);
      last.last = index;
    } else runs.push(condition.start(index, at));
  }
}

/** Drops the runs that end below index `cutoff`: every bucket of theirs was pruned. */
export function dropRunsBelow(runs: Run[], cutoff: number): void {
  let below = 0;
  while (below < runs.length && runs[below]!.last < cutoff) below++;
  runs.splice(0, below);
}

/**
 * After the buckets below index `cutoff` were dropped (and the runs ending there, `dropRunsBelow`):
 * moves the first run's start, if it was one of them, to its first bucket kept where the condition
 * holds (its last bucket was kept, so one is). Returns whether it moved.
 */
export function trimFirstRun<R extends Run>(
  runs: R[],
  buckets: ActiveBuckets,
  cutoff: number,
  condition: RunCondition<R>,
): boolean {
  const first = runs[0];
  if (first === undefined || first.first >= cutoff) return false;
  let at = 0;
  while (!condition.holdsAt(at)) at++;
  first.first = buckets.indexAt(at);
  return true;
}
