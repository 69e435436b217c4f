import { KeyscopeError } from '@keyscope/errors';

/**
 * Why the database's writes fail: the last failure of a transaction for a reason of the storage
 * (disk full, I/O error, damaged file, locked), until a later transaction writes successfully.
 */
export interface WriteFailure {
  /** SQLite's code, e.g. SQLITE_FULL or SQLITE_IOERR_WRITE. */
  readonly code: string;
  readonly message: string;
  /** Transactions failed since the last that wrote. */
  readonly failures: number;
}

/** SQLite's primary codes for a write refused by the storage rather than by the statement. */
const STORAGE_FAILURES: ReadonlySet<string> = new Set([
  'SQLITE_FULL',
  'SQLITE_IOERR',
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
  'SQLITE_READONLY',
  'SQLITE_CANTOPEN',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);

/**
 * The store's write failures, told by the connection's count of changed rows (`total_changes()`,
 * rolled-back statements included): a transaction that fails for a reason of the storage sets
 * one; a later transaction that changed rows clears it. One that had nothing to write does not:
 * it commits on a full disk too.
 */
export class WriteFailures {
  readonly #changes: () => number;
  #failure: (WriteFailure & { changesAtFailure: number }) | undefined;

  constructor(changes: () => number) {
    this.#changes = changes;
  }

  get current(): WriteFailure | undefined {
    if (this.#failure === undefined) return undefined;
    const { code, message, failures } = this.#failure;
    return { code, message, failures };
  }

  /** After an outermost transaction failed with `error`: recorded when the storage refused it. */
  failed(error: unknown): void {
    let sqlite: unknown = error;
    while (sqlite instanceof KeyscopeError) sqlite = sqlite.cause;
    const code = isSqliteError(sqlite) ? (sqlite as { code: string }).code : undefined;
    if (code === undefined || !STORAGE_FAILURES.has(code.split('_').slice(0, 2).join('_'))) return;
    this.#failure = {
      code,
      message: (sqlite as Error).message,
      failures: (this.#failure?.failures ?? 0) + 1,
      changesAtFailure: this.#changes(),
    };
  }

  /** After an outermost transaction committed. Reads the count only while failing, so a healthy commit costs nothing more. */
  committed(): void {
    if (this.#failure !== undefined && this.#changes() > this.#failure.changesAtFailure) {
      this.#failure = undefined;
    }
  }
}

export function isSqliteError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE');
}
