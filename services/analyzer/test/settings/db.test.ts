import { join } from 'node:path';
import { isKeyscopeError } from '@keyscope/errors';
import { KeyscopeStore } from '@keyscope/store';
import { afterEach, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, executedTwice, startConfigured, until } from './configured-keyscope.ts';
import { damagedDatabase } from './damaged-database.ts';

let keyscope: ConfiguredKeyscope | undefined;
afterEach(async () => {
  await keyscope?.stop();
  keyscope = undefined;
});

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
