/**
 * Statistics over repetitions. The machine a benchmark runs on is rarely quiet, so every figure
 * is a median of repetitions, and a comparison between two contenders is the median of their
 * per-repetition ratios: both ran back to back, under the same load.
 */

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile (0–100) of `values`; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Median of `numerators[i] / denominators[i]`: paired repetitions that shared the machine's load. */
export function pairedRatio(numerators: readonly number[], denominators: readonly number[]): number {
  if (numerators.length !== denominators.length) {
    throw new RangeError(
      `paired samples must have equal lengths, received ${numerators.length} and ${denominators.length}`,
    );
  }
  return median(numerators.map((n, i) => n / denominators[i]!));
}

/** Wall-clock seconds `work` took. */
export function secondsOf(work: () => void): number {
  const started = process.hrtime.bigint();
  work();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

/** CPU seconds (user + system) this process spent since `since` (a `process.cpuUsage()` reading). */
export function cpuSecondsSince(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
}
