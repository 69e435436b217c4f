import { createHash } from 'node:crypto';

/**
 * Ids derived only from what identifies the thing (class + key for a finding, the grouping tuple
 * for an incident), so the same input in any order, redelivered any number of times, on any
 * instance, yields the same ids — and a redelivery is an upsert, never a second row.
 */
export function stableId(prefix: string, parts: readonly (string | number)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) {
    hash.update(String(part));
    hash.update('\u0000');
  }
  return `${prefix}_${hash.digest('hex').slice(0, 24)}`;
}
