import type { Severity } from '@keyscope/detector';

/** Most severe first; the order `minSeverity` compares by. */
export const SEVERITIES: readonly Severity[] = ['critical', 'high', 'warning'];

const RANK: Readonly<Record<Severity, number>> = { critical: 2, high: 1, warning: 0 };

/** True when an incident of `severity` should reach a sink whose threshold is `minimum`. */
export function meetsSeverity(severity: Severity, minimum: Severity): boolean {
  return RANK[severity] >= RANK[minimum];
}
