import type { Database } from 'better-sqlite3';
import { invalidConfig } from './config-check.ts';
import type { DedupRecord, DedupStore, InProgressRecord } from './dedup-store.ts';

export interface SqliteDedupStoreOptions {
  /** An open better-sqlite3 database; the caller owns it (and closes it). */
  readonly database: Database;
  /** Created if absent. Default `idempotency_keys`. */
  readonly table?: string;
  /** Expired rows are deleted every this many inserts. Default 1000. */
  readonly sweepEveryInserts?: number;
}

interface Row {
  state: 'in_progress' | 'completed';
  fingerprint: string;
  owner: string;
  response: string | null;
  expires_at: number;
}

/**
 * A `DedupStore` in SQLite. Its scope is whoever opens the file: one node's local file is a node
 * store; better-sqlite3 is synchronous, so every method runs to completion before another starts
 * in this process, and the insert is a single upsert statement, so two processes sharing the file
 * cannot both win a key either.
 */
export function createSqliteDedupStore(options: SqliteDedupStoreOptions): DedupStore {
  const { database } = options;
  const table = options.table ?? 'idempotency_keys';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) {
    throw invalidConfig('table', 'an SQL identifier (letters, digits, underscores)', table);
  }
  const sweepEveryInserts = options.sweepEveryInserts ?? 1000;
  if (!Number.isSafeInteger(sweepEveryInserts) || sweepEveryInserts <= 0) {
    throw invalidConfig('sweepEveryInserts', 'a positive integer', sweepEveryInserts);
  }

  database.exec(`CREATE TABLE IF NOT EXISTS ${table} (
    key TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('in_progress', 'completed')),
    fingerprint TEXT NOT NULL,
    owner TEXT NOT NULL,
    response TEXT,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID`);
  database.exec(`CREATE INDEX IF NOT EXISTS ${table}_expires_at ON ${table} (expires_at)`);

  // Takes the key when it is absent or expired; a live row is left alone and `changes` stays 0.
  const upsert = database.prepare(
    `INSERT INTO ${table} (key, state, fingerprint, owner, response, expires_at)
     VALUES (@key, 'in_progress', @fingerprint, @owner, NULL, @expiresAt)
     ON CONFLICT (key) DO UPDATE SET
       state = 'in_progress', fingerprint = excluded.fingerprint, owner = excluded.owner,
       response = NULL, expires_at = excluded.expires_at
     WHERE ${table}.expires_at <= @now`,
  );
  const select = database.prepare<[string, number], Row>(
    `SELECT state, fingerprint, owner, response, expires_at FROM ${table} WHERE key = ? AND expires_at > ?`,
  );
  const completeRow = database.prepare(
    `UPDATE ${table} SET state = 'completed', response = ?, expires_at = ?
     WHERE key = ? AND owner = ? AND state = 'in_progress'`,
  );
  const deleteRow = database.prepare(
    `DELETE FROM ${table} WHERE key = ? AND owner = ? AND state = 'in_progress'`,
  );
  const deleteExpired = database.prepare(`DELETE FROM ${table} WHERE expires_at <= ?`);

  let insertsSinceSweep = 0;
  const insert = database.transaction((key: string, record: InProgressRecord, now: number) => {
    const taken = upsert.run({
      key,
      fingerprint: record.fingerprint,
      owner: record.owner,
      expiresAt: record.expiresAtUnixMillis,
      now,
    });
    if (taken.changes === 1) return null;
    const row = select.get(key, now);
    // The row cannot vanish inside the transaction; a missing one means another writer broke it.
    if (row === undefined) throw new Error(`idempotency key row for ${JSON.stringify(key)} vanished`);
    return recordOf(row);
  });

  return {
    async insertIfAbsent(key: string, record: InProgressRecord, nowUnixMillis: number) {
      const existing = insert.immediate(key, record, nowUnixMillis);
      if (existing === null && ++insertsSinceSweep >= sweepEveryInserts) {
        insertsSinceSweep = 0;
        deleteExpired.run(nowUnixMillis);
      }
      return existing;
    },

    async complete(key: string, owner: string, response: string, expiresAtUnixMillis: number) {
      return completeRow.run(response, expiresAtUnixMillis, key, owner).changes === 1;
    },

    async release(key: string, owner: string) {
      return deleteRow.run(key, owner).changes === 1;
    },

    async lookup(key: string, nowUnixMillis: number) {
      const row = select.get(key, nowUnixMillis);
      return row === undefined ? null : recordOf(row);
    },
  };
}

function recordOf(row: Row): DedupRecord {
  const base = { fingerprint: row.fingerprint, owner: row.owner, expiresAtUnixMillis: row.expires_at };
  return row.state === 'completed'
    ? { state: 'completed', ...base, response: row.response ?? '' }
    : { state: 'in_progress', ...base };
}
