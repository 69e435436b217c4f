import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import type { InProgressRecord } from '../src/dedup-store.ts';
import { createSqliteDedupStore } from '../src/sqlite-store.ts';
import { STORES } from './stores.ts';

const NOW = 1_700_000_000_000;

function lock(owner: string, fingerprint = 'fp', expiresAtUnixMillis = NOW + 1_000): InProgressRecord {
  return { state: 'in_progress', fingerprint, owner, expiresAtUnixMillis };
}

describe.each(STORES)('the DedupStore contract on the %s', (_name, makeStore) => {
  it('admits exactly one of many concurrent inserts of one key', async () => {
    const store = makeStore();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.insertIfAbsent('k1', lock(`owner-${i}`), NOW)),
    );
    expect(results.filter((result) => result === null)).toHaveLength(1);
    const winner = results.indexOf(null);
    for (const result of results) if (result !== null) expect(result.owner).toBe(`owner-${winner}`);
  });

  it('returns the live record unchanged to a later insert', async () => {
    const store = makeStore();
    await store.insertIfAbsent('k1', lock('a', 'fp-a'), NOW);
    await expect(store.insertIfAbsent('k1', lock('b', 'fp-b'), NOW + 1)).resolves.toEqual(lock('a', 'fp-a'));
    await expect(store.lookup('k1', NOW + 1)).resolves.toEqual(lock('a', 'fp-a'));
  });

  it('takes over a record once it has expired', async () => {
    const store = makeStore();
    await store.insertIfAbsent('k1', lock('a'), NOW);
    await expect(store.insertIfAbsent('k1', lock('b', 'fp', NOW + 5_000), NOW + 1_000)).resolves.toBeNull();
    await expect(store.lookup('k1', NOW + 1_000)).resolves.toMatchObject({ owner: 'b' });
    await expect(store.lookup('k1', NOW + 5_000)).resolves.toBeNull();
  });

  it('completes only its owner’s in-progress record, with the response and the new expiry', async () => {
    const store = makeStore();
    await store.insertIfAbsent('k1', lock('a'), NOW);
    await expect(store.complete('k1', 'b', 'theirs', NOW + 60_000)).resolves.toBe(false);
    await expect(store.complete('k1', 'a', 'mine', NOW + 60_000)).resolves.toBe(true);
    await expect(store.lookup('k1', NOW + 59_999)).resolves.toEqual({
      state: 'completed',
      fingerprint: 'fp',
      owner: 'a',
      response: 'mine',
      expiresAtUnixMillis: NOW + 60_000,
    });
    await expect(store.complete('k1', 'a', 'again', NOW + 90_000)).resolves.toBe(false);
    await expect(store.complete('missing', 'a', 'x', NOW + 60_000)).resolves.toBe(false);
  });

  it('releases only its owner’s in-progress record', async () => {
    const store = makeStore();
    await store.insertIfAbsent('k1', lock('a'), NOW);
    await expect(store.release('k1', 'b')).resolves.toBe(false);
    await expect(store.release('k1', 'a')).resolves.toBe(true);
    await expect(store.lookup('k1', NOW)).resolves.toBeNull();
    await store.insertIfAbsent('k2', lock('a'), NOW);
    await store.complete('k2', 'a', 'done', NOW + 60_000);
    await expect(store.release('k2', 'a')).resolves.toBe(false);
    await expect(store.lookup('k2', NOW)).resolves.toMatchObject({ state: 'completed' });
  });

  it('keeps keys apart', async () => {
    const store = makeStore();
    await expect(store.insertIfAbsent('k1', lock('a'), NOW)).resolves.toBeNull();
    await expect(store.insertIfAbsent('k2', lock('b'), NOW)).resolves.toBeNull();
  });
});

describe('createSqliteDedupStore', () => {
  it('deletes expired rows as it inserts', async () => {
    const database = new Database(':memory:');
    const store = createSqliteDedupStore({ database, sweepEveryInserts: 2 });
    await store.insertIfAbsent('old', lock('a', 'fp', NOW + 10), NOW);
    await store.insertIfAbsent('new-1', lock('b'), NOW + 20);
    await store.insertIfAbsent('new-2', lock('c'), NOW + 20);
    await store.insertIfAbsent('new-3', lock('d'), NOW + 20);
    const keys = database.prepare('SELECT key FROM idempotency_keys ORDER BY key').pluck().all();
    expect(keys).toEqual(['new-1', 'new-2', 'new-3']);
  });

  it('keeps its records across store instances on one database file', async () => {
    const database = new Database(':memory:');
    const first = createSqliteDedupStore({ database, table: 'payments_keys' });
    await first.insertIfAbsent('k1', lock('a'), NOW);
    const second = createSqliteDedupStore({ database, table: 'payments_keys' });
    await expect(second.insertIfAbsent('k1', lock('b'), NOW)).resolves.toMatchObject({ owner: 'a' });
  });

  it('refuses a table name that is not an SQL identifier', () => {
    expect(() => createSqliteDedupStore({ database: new Database(':memory:'), table: 'keys; DROP' })).toThrow(
      expect.objectContaining({ code: 'KS_GATE_CONFIG_INVALID' }),
    );
  });
});
