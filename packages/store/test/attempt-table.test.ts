import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { arrival, client, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyscopeStore } from '../src/index.ts';
import { migrate } from '../src/migrations.ts';

let dir: string;
let path: string;
let store: KeyscopeStore;

/** A store whose key index is brought up to date every `batch` appended attempts. */
function open(batch: number): KeyscopeStore {
  return new KeyscopeStore({ path, attemptIndexBatchRows: batch });
}

const indexedRows = () => store.db.prepare('SELECT count(*) FROM attempt_keys').pluck().get() as number;
const attempt = (key: string, node: string, at = 0) => server({ key, node, store: node, at });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-attempt-table-'));
  path = join(dir, 'keyscope.db');
  store = open(3);
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the attempt log in SQLite', () => {
  it('indexes attempts in batches at the end of a transaction, not per insert', () => {
    store.transaction(() => {
      store.attemptLog.append('k1', attempt('k1', 'a'));
      store.attemptLog.append('k2', attempt('k2', 'a'));
    });
    expect(indexedRows()).toBe(0);
    store.transaction(() => store.attemptLog.append('k3', attempt('k3', 'a')));
    expect(indexedRows()).toBe(3);
  });

  it('refuses a redelivered attempt while it waits for the index and after it is indexed', () => {
    const first = attempt('k1', 'a');
    store.transaction(() => expect(store.attemptLog.append('k1', first)).toBe(true));
    store.transaction(() => expect(store.attemptLog.append('k1', { ...first })).toBe(false));
    store.transaction(() => {
      store.attemptLog.append('k2', attempt('k2', 'a'));
      store.attemptLog.append('k3', attempt('k3', 'a'));
    });
    expect(indexedRows()).toBe(3);
    store.transaction(() => expect(store.attemptLog.append('k1', { ...first })).toBe(false));
    expect(store.counts().attempts).toBe(3);
  });

  it("answers a key's attempts from the index and the waiting tail together", () => {
    const indexed = [attempt('k1', 'a'), attempt('k2', 'a'), attempt('k3', 'a')];
    store.transaction(() => {
      for (const a of indexed) store.attemptLog.append(a.key, a);
    });
    const waiting = attempt('k1', 'b', 5);
    store.transaction(() => store.attemptLog.append('k1', waiting));
    expect(store.attemptLog.attemptsOf('k1').map((a) => a.spanId)).toEqual([
      indexed[0]!.spanId,
      waiting.spanId,
    ]);
    expect(store.attemptsOfKey('k1').map((a) => a.spanId)).toEqual([indexed[0]!.spanId, waiting.spanId]);
  });

  it('finds tenant-qualified partitions of a key in the tail too', () => {
    const tenantAttempt = server({ key: 'k1', tenant: 't1', node: 'a', store: 'A', at: 0 });
    store.transaction(() => store.attemptLog.append('k1\u0000t1', tenantAttempt));
    expect(store.attemptsOfKey('k1').map((a) => a.tenant)).toEqual(['t1']);
    expect(store.attemptsOfKey('k1', 't2')).toEqual([]);
    expect(store.attemptsOfKey('k')).toEqual([]);
  });

  it('indexes what a killed process left unindexed when the store opens again', () => {
    const first = attempt('k1', 'a');
    store.transaction(() => store.attemptLog.append('k1', first));
    // Closed without another transaction: as after a kill, the row is committed, its index entry not.
    store.close();
    store = open(1000);
    expect(indexedRows()).toBe(1);
    store.transaction(() => expect(store.attemptLog.append('k1', { ...first })).toBe(false));
    expect(store.attemptLog.attemptsOf('k1')).toHaveLength(1);
  });

  it('forgets the appends of a transaction that failed, so their redelivery gets through', () => {
    const lost = attempt('k1', 'a');
    expect(() =>
      store.transaction(() => {
        store.attemptLog.append('k1', lost);
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    store.transaction(() => expect(store.attemptLog.append('k1', { ...lost })).toBe(true));
    expect(store.attemptLog.attemptsOf('k1')).toHaveLength(1);
  });

  it('keeps refusing redeliveries when the transaction that indexed the tail fails', () => {
    const kept = attempt('k1', 'a');
    store.transaction(() => store.attemptLog.append('k1', kept));
    expect(() =>
      store.transaction(() => {
        // A purge indexes the waiting tail first; then the transaction fails and all of it rolls back.
        store.purge({ attemptsBeforeUnixMillis: 0, recordsBeforeUnixMillis: 0, maxRows: 1 });
        expect(indexedRows()).toBe(1);
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    expect(indexedRows()).toBe(0);
    store.transaction(() => expect(store.attemptLog.append('k1', { ...kept })).toBe(false));
    expect(store.counts().attempts).toBe(1);
  });

  it('purges expired attempts with their index entries, indexing waiting ones first', () => {
    store.transaction(() => {
      store.attemptLog.append('old', attempt('old', 'a', 0));
      store.attemptLog.append('new', attempt('new', 'a', 100_000));
    });
    const removed = store.purge({
      attemptsBeforeUnixMillis: TEST_EPOCH_UNIX_MILLIS + 50_000,
      recordsBeforeUnixMillis: 0,
      maxRows: 10,
    });
    expect(removed).toBe(1);
    expect(indexedRows()).toBe(1);
    expect(store.attemptsOfKey('old')).toEqual([]);
    expect(store.attemptsOfKey('new')).toHaveLength(1);
  });

  it('moves the key index of a database written before it into attempt_keys', () => {
    store.close();
    rmSync(path);
    const old = new BetterSqlite3(path);
    migrate(old, 3);
    const first = attempt('k1', 'a');
    old
      .prepare(
        'INSERT INTO attempts (partition_key, trace_id, span_id, key, end_ms, body) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run('k1', first.traceId, first.spanId, 'k1', first.endUnixMillis, JSON.stringify(first));
    old.close();
    store = open(1000);
    expect(indexedRows()).toBe(1);
    expect(store.attemptsOfKey('k1').map((a) => a.spanId)).toEqual([first.spanId]);
    store.transaction(() => expect(store.attemptLog.append('k1', { ...first })).toBe(false));
  });

  it('stores an attempt as a positional row without its key and ids, and reads every kind back whole', () => {
    store.close();
    store = open(1); // indexed at the end of each transaction, so reads come from the rows
    const attempts = [
      server({ key: 'k1', node: 'a', store: 'A', tenant: 't1', parentSpanId: '00f067aa0ba902b7' }),
      client({ key: 'k1', resendCount: 2, statusCode: 503, error: 'timeout' }),
      arrival({ key: 'k1', node: 'b', zone: 'eu-west-1b' }),
    ];
    store.transaction(() => {
      for (const a of attempts) store.attemptLog.append('k1', a);
    });
    const bodies = store.db.prepare('SELECT body FROM attempts ORDER BY id').pluck().all() as string[];
    expect(bodies.map((body) => JSON.parse(body)[0])).toEqual(['server', 'client', 'arrival']);
    for (const [i, a] of attempts.entries()) {
      expect(bodies[i]).not.toContain(a.traceId);
      expect(bodies[i]).not.toContain(a.spanId);
    }
    const read = store.attemptLog.attemptsOf('k1');
    expect(read).toEqual(attempts);
    expect(read.map((a) => Object.keys(a))).toEqual(attempts.map((a) => Object.keys(a)));
  });

  it('reads rows written in the object form, with or without the key and ids in the body', () => {
    const full = attempt('k1', 'a');
    const emptied = attempt('k1', 'b');
    const insert = store.db.prepare(
      'INSERT INTO attempts (partition_key, trace_id, span_id, key, end_ms, body) VALUES (?, ?, ?, ?, ?, ?)',
    );
    insert.run('k1', full.traceId, full.spanId, 'k1', full.endUnixMillis, JSON.stringify(full));
    const body = JSON.stringify({ ...emptied, key: '', traceId: '', spanId: '' });
    insert.run('k1', emptied.traceId, emptied.spanId, 'k1', emptied.endUnixMillis, body);
    store.close();
    store = open(1000);
    expect(store.attemptLog.attemptsOf('k1')).toEqual([full, emptied]);
  });
});
