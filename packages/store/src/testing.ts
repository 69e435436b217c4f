import { connectionOf, type KeyscopeStore } from './keyscope-store.ts';

/**
 * Test hooks for what SQLite keeps per connection, so that a second connection to the store's
 * file cannot do it (`@keyscope/store/testing`; the service never imports it). Everything else a
 * test reads or changes in the database (rows, triggers) goes through a second better-sqlite3
 * connection to the file.
 */

/**
 * Caps the database file at the pages it has, on the store's own connection (SQLite's
 * `max_page_count`), as a full disk would: the next write that needs a page fails with
 * SQLITE_FULL. Returns what gives the disk room again (the cap the connection had before).
 */
export function fillDisk(store: KeyscopeStore): { makeRoom(): void } {
  const db = connectionOf(store);
  const cap = db.pragma('max_page_count', { simple: true }) as number;
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
  return {
    makeRoom: () => {
      db.pragma(`max_page_count = ${cap}`);
    },
  };
}
