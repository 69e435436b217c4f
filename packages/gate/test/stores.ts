import Database from 'better-sqlite3';
import type { DedupStore } from '../src/dedup-store.ts';
import { createMemoryDedupStore } from '../src/memory-store.ts';
import { createSqliteDedupStore } from '../src/sqlite-store.ts';

/** Both implementations, for `describe.each`: every behaviour is checked on each. */
export const STORES: readonly [string, () => DedupStore][] = [
  ['memory store', () => createMemoryDedupStore()],
  ['sqlite store', () => createSqliteDedupStore({ database: new Database(':memory:') })],
];

/** A store whose every call rejects, as a store behind a broken connection would. */
export function unavailableStore(): DedupStore {
  const down = async () => {
    throw new Error('connection refused');
  };
  return { insertIfAbsent: down, complete: down, release: down, lookup: down };
}
