import { hash } from 'node:crypto';

/**
 * Ids derived only from what identifies the thing (class + partition key for a finding, the grouping tuple
 * for an incident), so the same input in any order, redelivered any number of times, on any
 * instance, yields the same ids — and a redelivery is an upsert, never a second row.
 *
 * The hash covers each part followed by a NUL, hashed as one string: the same bytes as hashing the
 * parts one after another, in one call into the hash instead of two per part. `crypto.hash` is
 * the one-shot form: no Hash object per id, about half the time of `createHash` for these inputs.
 */
export function stableId(prefix: string, parts: readonly (string | number)[]): string {
  let text = '';
  for (const part of parts) text += `${part}\u0000`;
  return `${prefix}_${hash('sha256', text, 'hex').slice(0, 24)}`;
}

/**
 * A finding's id: its class and its key's partition key (partition-key.ts) — the key itself, or
 * with tenant-scoped keys the key and its tenant, so that two tenants' findings on one key are two.
 */
export function findingId(findingClass: string, partitionKey: string): string {
  return stableId('f', [findingClass, partitionKey]);
}
