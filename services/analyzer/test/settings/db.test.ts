import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { isKeyscopeError } from '@keyscope/errors';
import { KeyscopeStore } from '@keyscope/store';
import { server } from '@keyscope/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, executedTwice, startConfigured, until } from './configured-keyscope.ts';

let keyscope: ConfiguredKeyscope | undefined;
afterEach(async () => {
  await keyscope?.stop();
  keyscope = undefined;
});

/** A database of a few thousand attempts, one page in its middle overwritten. */
function damagedDatabase(path: string): void {
  const store = new KeyscopeStore({ path });
  for (let from = 0; from < 4_000; from += 500) {
    store.transaction(() => {
      for (let i = from; i < from + 500; i++)
        store.attemptLog.append(`key-${i}`, server({ key: `key-${i}` }));
    });
  }
  store.close();
  const pages = statSync(path).size / 4096;
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, Math.floor(pages / 2) * 4096);
  closeSync(fd);
}

describe('db.*', () => {
  it('db.path: the database is the file --db names, and holds what was exported', async () => {
    let path = '';
    keyscope = await startConfigured((dir) => {
      path = join(dir, 'chosen.db');
      return { flags: ['--db', path] };
    });
    expect((await keyscope.exportSpans(executedTwice('db-path-key'))).status).toBe(200);
    const store = new KeyscopeStore({ path, integrityCheck: 'off' });
    try {
      expect(store.findings.list({}, { limit: 10 }).items.map((finding) => finding.key)).toEqual([
        'db-path-key',
      ]);
    } finally {
      store.close();
    }
  });

  it('db.integrityCheck: a damaged database stops startup under quick, and is opened under off', async () => {
    let path = '';
    const damaged = (dir: string) => {
      path = join(dir, 'damaged.db');
      damagedDatabase(path);
      return { file: { db: { path } } };
    };
    const refused = await startConfigured(damaged).then(
      async (started) => {
        await started.stop();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(isKeyscopeError(refused) && refused.code).toBe('KS_STORE_CORRUPT');
    keyscope = await startConfigured((dir) => ({
      ...damaged(dir),
      env: { KEYSCOPE_DB_INTEGRITY_CHECK: 'off' },
    }));
    expect((await fetch(keyscope.apiUrl('/healthz'))).status).toBe(200);
  });

  it('db.maxBytes: past it the oldest rows are purged, by size', async () => {
    keyscope = await startConfigured({ env: { KEYSCOPE_DB_MAX_BYTES: '200000' } });
    expect(await keyscope.metric('keyscope_db_max_bytes')).toBe(200_000);
    for (let batch = 0; batch < 20; batch++) {
      const spans = Array.from({ length: 50 }, (_, i) => executedTwice(`db-max-${batch}-${i}`)).flat();
      expect((await keyscope.exportSpans(spans)).status).toBe(200);
    }
    const running = keyscope;
    await until(
      async () => (await running.metric('keyscope_db_purged_rows_total', { reason: 'size' })) > 0,
      10_000,
    );
  });
});
