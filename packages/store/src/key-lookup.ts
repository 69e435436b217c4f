import type { Attempt } from '@keyscope/attempts';
import type { AttemptTable } from './attempt-table.ts';

/**
 * Every attempt recorded for an idempotency key, in time order: those of the key's own partition,
 * and those of the key under each tenant (partition key = key + NUL + tenant), or only `tenant`'s.
 */
export function attemptsOfKey(attempts: AttemptTable, key: string, tenant?: string): Attempt[] {
  // Partition keys from `key` up to `key` + U+0001 are `key` itself and `key` + NUL + a tenant.
  const found = attempts
    .attemptsBetween(key, `${key}\u0001`)
    .filter((attempt) => tenant === undefined || attempt.tenant === tenant);
  return found.sort((a, b) => a.startUnixMillis - b.startUnixMillis || (a.spanId < b.spanId ? -1 : 1));
}
