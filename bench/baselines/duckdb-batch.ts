import { DuckDBInstance } from '@duckdb/node-api';
import type { AttemptRow } from './attempt-rows.ts';
import { CROSS_STORE_KEYS_SQL } from './attempt-rows.ts';

/**
 * Loads `rows` into a fresh in-memory DuckDB database through its appender (the bulk path DuckDB's
 * Node client documents for many rows) and runs the cross-store query. Returns the keys it found.
 */
export async function crossStoreKeysWithDuckDb(rows: readonly AttemptRow[]): Promise<string[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(
      'CREATE TABLE attempts (service VARCHAR, key VARCHAR, outcome VARCHAR, store VARCHAR)',
    );
    const appender = await connection.createAppender('attempts');
    for (const row of rows) {
      appender.appendVarchar(row.service);
      appender.appendVarchar(row.key);
      appender.appendVarchar(row.outcome);
      if (row.store === null) appender.appendNull();
      else appender.appendVarchar(row.store);
      appender.endRow();
    }
    appender.closeSync();
    const result = await connection.runAndReadAll(CROSS_STORE_KEYS_SQL);
    return result.getRows().map((row) => String(row[0]));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
