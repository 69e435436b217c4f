import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Attempt } from '@keyscope/attempts';
import { createDetector } from '@keyscope/detector';
import { isKeyscopeError } from '@keyscope/errors';
import { server } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type IntegrityCheck, KeyscopeStore } from '../src/index.ts';

let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-integrity-'));
  path = join(dir, 'keyscope.db');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A database the store wrote: `keys` keys executed twice each, findings and incidents included. */
function writeDatabase(keys: number): void {
  const store = new KeyscopeStore({ path });
  const detector = createDetector(undefined, { attemptLog: store.attemptLog });
  for (let from = 0; from < keys; from += 100) {
    const attempts: Attempt[] = [];
    for (let i = from; i < from + 100; i++) {
      attempts.push(server({ key: `key-${i}`, node: 'a', store: 'A', at: i / 100 }));
      attempts.push(server({ key: `key-${i}`, node: 'b', store: 'B', at: i / 100 + 1 }));
    }
    store.transaction(() =>
      store.applyChanges(
        detector.ingest({ attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } }),
      ),
    );
  }
  // Closing the last connection checkpoints the WAL into the file and removes it.
  store.close();
}

/** Overwrites one page in the middle of the file with bytes no B-tree page has. */
function damageMiddlePage(): void {
  const pageSize = 4096;
  const pages = statSync(path).size / pageSize;
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, Math.floor(pages / 2) * pageSize);
  closeSync(fd);
}

function openError(integrityCheck?: IntegrityCheck): unknown {
  try {
    new KeyscopeStore({ path, ...(integrityCheck === undefined ? {} : { integrityCheck }) }).close();
    return undefined;
  } catch (error) {
    return error;
  }
}

describe('the integrity check at open', () => {
  it('opens an intact database with every mode', () => {
    writeDatabase(2_000);
    for (const mode of ['quick', 'full', 'off'] as const) expect(openError(mode)).toBeUndefined();
  });

  it('refuses a database with a damaged page in the middle, by default and with a full check', () => {
    writeDatabase(2_000);
    expect(statSync(path).size).toBeGreaterThan(100 * 4096);
    damageMiddlePage();
    for (const mode of [undefined, 'quick', 'full'] as const) {
      const error = openError(mode);
      expect(isKeyscopeError(error) && error.code, String(mode)).toBe('KS_STORE_CORRUPT');
      expect(isKeyscopeError(error) && error.retryable).toBe(false);
      // The message says what to do.
      expect((error as Error).message).toMatch(/restore the file from a backup, or move it away/);
    }
  });

  it('refuses a file that is not a SQLite database', () => {
    const fd = openSync(path, 'w');
    writeSync(fd, Buffer.alloc(8192, 0x42));
    closeSync(fd);
    const error = openError('off');
    expect(isKeyscopeError(error) && error.code).toBe('KS_STORE_CORRUPT');
  });
});
