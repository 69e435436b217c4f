import Database from 'better-sqlite3';
import type { AttemptRow } from './attempt-rows.ts';
import { CROSS_STORE_KEYS_SQL } from './attempt-rows.ts';

/**
 * Loads `rows` into a fresh in-memory SQLite database with one prepared INSERT in one transaction
 * (SQLite's own advice for bulk loads) and runs `sql` (the cross-store query by default). Returns the keys it found.
 */
export function crossStoreKeysWithSqlite(rows: readonly AttemptRow[], sql = CROSS_STORE_KEYS_SQL): string[] {
  const db = new Database(':memory:');
  try {
    db.exec('CREATE TABLE attempts (service TEXT, key TEXT, outcome TEXT, store TEXT)');
    const insert = db.prepare('INSERT INTO attempts (service, key, outcome, store) VALUES (?, ?, ?, ?)');
    db.transaction(() => {
      for (const row of rows) insert.run(row.service, row.key, row.outcome, row.store);
    })();
    return db.prepare(sql).pluck().all() as string[];
  } finally {
    db.close();
  }
}
