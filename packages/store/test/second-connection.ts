import BetterSqlite3 from 'better-sqlite3';

/**
 * Runs `work` on a connection of its own to the database file, as another process would: it sees
 * what the store committed, nothing of a transaction the store has open, and what it writes the
 * store reads at its next statement.
 */
export function onSecondConnection<T>(path: string, work: (db: BetterSqlite3.Database) => T): T {
  const db = new BetterSqlite3(path);
  try {
    return work(db);
  } finally {
    db.close();
  }
}

/** The first column of the first row `sql` returns, read on a second connection. */
export function committedValue(path: string, sql: string): unknown {
  return onSecondConnection(path, (db) => db.prepare(sql).pluck().get());
}
