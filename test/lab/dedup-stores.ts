import { createRequire } from 'node:module';
import {
  createMemoryDedupStore,
  createSqliteDedupStore,
  type DedupStore,
  type Placement,
  type ScopeConfig,
  type SqliteDedupStoreOptions,
} from '@keyscope/gate';
import type { StoreScope } from './scenarios.ts';

/**
 * A payments node's dedup store and the scope the team declares for it. A node store lives in the
 * node's memory (a kill empties it) and declares that retries come back to this node, which the
 * lab's proxy breaks when a node fails. A cluster store is one SQLite file that every node of the
 * cluster opens — one namespace, reachable from every node a retry can reach — and declares so.
 */
type SqliteDatabase = SqliteDedupStoreOptions['database'];

/** better-sqlite3 is the gate's (optional peer) dependency, not the test package's: the lab takes the gate's. */
function openDatabase(path: string): SqliteDatabase {
  const require = createRequire(import.meta.resolve('@keyscope/gate'));
  const Database = require('better-sqlite3') as new (
    path: string,
    options: { timeout: number },
  ) => SqliteDatabase;
  // Processes take turns at the file: a writer waits for another's lock rather than failing.
  const database = new Database(path, { timeout: 10_000 });
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  return database;
}

/** The store of `scope`: a fresh memory store, or the cluster's SQLite file at `path`. */
export function openDedupStore(scope: StoreScope, path: string | undefined): DedupStore {
  if (scope === 'node') return createMemoryDedupStore();
  if (path === undefined || path === '') throw new Error('a cluster store needs the path of its SQLite file');
  return createSqliteDedupStore({ database: openDatabase(path) });
}

/** What the team declares: the key scope of its store, and how far its retries travel. */
export function declaredScope(placement: Placement, scope: StoreScope): ScopeConfig {
  return scope === 'node'
    ? { placement, keyScope: 'node', retryScope: { level: 'node' } }
    : // Round robin sends a retry to any node of the cluster, and the cluster's store admits it.
      { placement, keyScope: 'cluster', retryScope: { level: 'cluster' } };
}
