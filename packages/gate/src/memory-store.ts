import type { DedupRecord, DedupStore, InProgressRecord } from './dedup-store.ts';

const MIN_SWEEP_SIZE = 1024;

/**
 * A `DedupStore` in this process's memory: a node-scoped store by nature (declare `keyScope:
 * 'node'`). Expired records are dropped when touched and by a sweep that runs whenever the map
 * has doubled since the last one, so memory follows the live keys at amortized O(1) per insert.
 */
export function createMemoryDedupStore(): DedupStore {
  const records = new Map<string, DedupRecord>();
  let sweepAtSize = MIN_SWEEP_SIZE;

  function live(key: string, nowUnixMillis: number): DedupRecord | null {
    const record = records.get(key);
    if (record === undefined) return null;
    if (record.expiresAtUnixMillis <= nowUnixMillis) {
      records.delete(key);
      return null;
    }
    return record;
  }

  function sweep(nowUnixMillis: number): void {
    for (const [key, record] of records) {
      if (record.expiresAtUnixMillis <= nowUnixMillis) records.delete(key);
    }
    sweepAtSize = Math.max(MIN_SWEEP_SIZE, records.size * 2);
  }

  function ownedInProgress(key: string, owner: string): boolean {
    const record = records.get(key);
    return record !== undefined && record.state === 'in_progress' && record.owner === owner;
  }

  return {
    // Each method does its whole read-modify-write before its first await point, which is what
    // makes it atomic within the one JavaScript thread that owns the map.
    async insertIfAbsent(key: string, record: InProgressRecord, nowUnixMillis: number) {
      const existing = live(key, nowUnixMillis);
      if (existing !== null) return existing;
      records.set(key, { ...record });
      if (records.size >= sweepAtSize) sweep(nowUnixMillis);
      return null;
    },

    async complete(key: string, owner: string, response: string, expiresAtUnixMillis: number) {
      const record = records.get(key);
      if (record === undefined || !ownedInProgress(key, owner)) return false;
      records.set(key, {
        state: 'completed',
        fingerprint: record.fingerprint,
        owner,
        response,
        expiresAtUnixMillis,
      });
      return true;
    },

    async release(key: string, owner: string) {
      if (!ownedInProgress(key, owner)) return false;
      records.delete(key);
      return true;
    },

    async lookup(key: string, nowUnixMillis: number) {
      return live(key, nowUnixMillis);
    },
  };
}
