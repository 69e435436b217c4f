import { KeyscopeError } from '@keyscope/errors';
import BetterSqlite3, { type Database } from 'better-sqlite3';
import { STORE_UNAVAILABLE } from './errors.ts';
import { checkIntegrity, damagedDatabase, type IntegrityCheck, isDamage } from './integrity-check.ts';
import { migrate } from './migrations.ts';
import { isSqliteError } from './write-failures.ts';

/** Pages of WAL after which a commit checkpoints: ~40 MB, or ~256 MB as a bound behind a checkpoint thread. */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;
const WAL_AUTOCHECKPOINT_PAGES_BEHIND_THREAD = 65_536;

/**
 * Opens the database at `path` in WAL mode, refuses it when damaged (`integrityCheck`) or written
 * by a newer keyscope or a pre-release build, and applies the migrations it lacks (migrations.ts).
 * Every failure closes what was opened and throws a KeyscopeError: KS_STORE_CORRUPT,
 * KS_STORE_NEWER_SCHEMA, KS_STORE_PRE_RELEASE_SCHEMA or KS_STORE_UNAVAILABLE.
 */
export function openDatabase(
  path: string,
  options: { integrityCheck: IntegrityCheck; checkpointsInBackground: boolean },
): Database {
  let db: Database | undefined;
  try {
    db = new BetterSqlite3(path);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    // Attempts arrive in idempotency-key order, i.e. at random places in the key index: a
    // larger page cache keeps those pages hot, and checkpointing every ~40 MB of WAL instead of
    // every 4 MB writes each page back once instead of many times (measured: commits ~2x
    // cheaper). journal_size_limit trims the WAL file after a checkpoint.
    db.pragma('cache_size = -65536');
    db.pragma(
      `wal_autocheckpoint = ${options.checkpointsInBackground ? WAL_AUTOCHECKPOINT_PAGES_BEHIND_THREAD : WAL_AUTOCHECKPOINT_PAGES}`,
    );
    db.pragma('journal_size_limit = 67108864');
    // Before the migrations, which would otherwise write into a damaged file.
    checkIntegrity(db, options.integrityCheck, path);
    migrate(db, path);
    return db;
  } catch (error) {
    if (db?.open) db.close();
    throw openFailure(path, error);
  }
}

/** What opening the database failed with, or at with the tables' first reads (`KeyscopeStore`'s constructor). */
export function openFailure(path: string, error: unknown): unknown {
  if (error instanceof KeyscopeError || !isSqliteError(error)) return error;
  // Damage met while opening (the header is not SQLite's, or a page read on the way is broken).
  if (isDamage(error)) return damagedDatabase(path, (error as Error).message, error);
  return new KeyscopeError(STORE_UNAVAILABLE, `cannot open database ${path}: ${(error as Error).message}`, {
    cause: error,
  });
}
