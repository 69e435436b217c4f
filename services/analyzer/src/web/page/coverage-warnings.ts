import type { ScopeRowJson } from './api-types.ts';

/** Below this share of a tier's requests seen whole, the scopes page warns that it sees a sample. */
export const COVERAGE_WARNING_BELOW = 0.9;

/**
 * What keyscope cannot see of a tier, in words, one sentence per figure below
 * COVERAGE_WARNING_BELOW: its findings there rest on a sample, and duplicates may go unseen. And,
 * for a tier whose replay header does not reach keyscope, how many repeats say so and what to do.
 */
export function coverageWarningsOf(row: ScopeRowJson): string[] {
  const { coverage } = row;
  const figures: [number | null, string][] = [
    [coverage.arrivalsWithDecisionRatio, "of this tier's arrivals with their decision"],
    [coverage.requestsWithSendRatio, "of this tier's requests with the send that made them"],
    [coverage.sendsWithServerSpanRatio, 'of the sends to this tier with the server span they reached'],
    [coverage.keysFullyVisibleRatio, "of this tier's keys with every send and decision"],
  ];
  const warnings: string[] = [];
  for (const [ratio, what] of figures) {
    if (ratio === null || ratio >= COVERAGE_WARNING_BELOW) continue;
    warnings.push(`keyscope sees ${Math.floor(ratio * 100 + 1e-9)}% ${what}: sampling?`);
  }
  const replay = row.replayHeader;
  if (replay?.verdict === 'missing' && replay.advice !== null)
    warnings.push(`${replay.repeats} repeats of a key on one node, no replay seen. ${replay.advice}`);
  return warnings;
}
