import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activity, arrival, client, effect, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ARRIVAL, ENTRY, SEGMENT, SERVER } from '../src/attempt-codec.ts';
import { type AttemptTable, EXPIRED_BATCHES, INDEX_BATCH_ROWS } from '../src/attempt-table.ts';
import { spanIdHash } from '../src/attempt-tail.ts';
import { KeyscopeStore } from '../src/index.ts';
import { connectionOf } from '../src/keyscope-store.ts';
import { purgeBefore } from './purge-before.ts';

let dir: string;
let path: string;
let store: KeyscopeStore;

/** A store whose key index is brought up to date every `batch` appended attempts. */
function open(batch: number): KeyscopeStore {
  return new KeyscopeStore({ path, attemptIndexBatchRows: batch });
}

/** Read on the store's own connection: one test reads them inside a transaction it then fails. */
const indexedRows = () =>
  connectionOf(store).prepare('SELECT count(*) FROM attempt_key_generations').pluck().get() as number;
/** Each batch row: its body as text, and where each partition key's array lies in it. */
const batches = () =>
  (
    connectionOf(store)
      .prepare('SELECT end_ms, attempts, keys, body FROM attempt_batches ORDER BY id')
      .all() as {
      end_ms: number;
      attempts: number;
      keys: string;
      body: Buffer;
    }[]
  ).map((row) => ({
    endUnixMillis: row.end_ms,
    attempts: row.attempts,
    keys: JSON.parse(row.keys) as [string, number, number][],
    body: row.body.toString('utf8'),
  }));
/** The JSON array a batch holds for `partitionKey`, cut from its bytes as the index reads it. */
const arrayOf = (batch: ReturnType<typeof batches>[number], partitionKey: string) => {
  const [, start, length] = batch.keys.find(([key]) => key === partitionKey)!;
  return JSON.parse(
    Buffer.from(batch.body)
      .subarray(start - 1, start - 1 + length)
      .toString('utf8'),
  ) as unknown[];
};
/** The entries of a partition key's array in a batch (attempt-codec.ts: `[key, baseStart, ...entries]`). */
const entriesOf = (batch: ReturnType<typeof batches>[number], partitionKey: string) => {
  const array = arrayOf(batch, partitionKey);
  expect(array[SEGMENT.key]).toBe(partitionKey);
  return array.slice(SEGMENT.firstEntry) as unknown[][];
};
const attempt = (key: string, node: string, at = 0) => server({ key, node, store: node, at });

/** Appends k1, k2 and k3 in one transaction of a store that indexes every 3: the index holds them. Returns k1's attempt. */
function indexedFirstOfThree() {
  const first = attempt('k1', 'a');
  store.transaction(() => {
    store.attemptLog.append('k1', first);
    store.attemptLog.append('k2', attempt('k2', 'a'));
    store.attemptLog.append('k3', attempt('k3', 'a'));
  });
  expect(indexedRows()).toBe(3);
  return first;
}

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

  it('indexes on its defaults once an indexing step of attempts waits, keeping each indexing commit short', () => {
    store.close();
    store = new KeyscopeStore({ path });
    const appendKeys = (from: number, count: number) =>
      store.transaction(() => {
        for (let i = from; i < from + count; i++) store.attemptLog.append(`k${i}`, attempt(`k${i}`, 'a'));
      });
    appendKeys(0, INDEX_BATCH_ROWS - 1);
    expect(indexedRows()).toBe(0);
    appendKeys(INDEX_BATCH_ROWS - 1, 1);
    expect(indexedRows()).toBe(INDEX_BATCH_ROWS);
    expect(INDEX_BATCH_ROWS).toBeLessThanOrEqual(2_500);
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

  it('tells apart written attempts of a key whose span ids hash alike, and still refuses each again', () => {
    // Two span ids with the same 32-bit hash, found by trying (a birthday search: ~2^16 tries).
    const seen = new Map<number, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; pair === undefined; i++) {
      const spanId = i.toString(16).padStart(16, '0');
      const hash = spanIdHash(spanId);
      const earlier = seen.get(hash);
      if (earlier !== undefined) pair = [earlier, spanId];
      else seen.set(hash, spanId);
    }
    store.close();
    store = open(1_000);
    const [one, other] = pair.map((spanId, i) => ({ ...attempt('k1', 'a', i), spanId }));
    store.transaction(() => expect(store.attemptLog.append('k1', one!)).toBe(true));
    // Written, so the tail keeps only the hash of its span id: the second is read back against it.
    store.transaction(() => expect(store.attemptLog.append('k1', other!)).toBe(true));
    store.transaction(() => {
      expect(store.attemptLog.append('k1', { ...one! })).toBe(false);
      expect(store.attemptLog.append('k1', { ...other! })).toBe(false);
    });
    expect(store.attemptLog.attemptsOf('k1').map((a) => a.spanId)).toEqual(pair);
    expect(indexedRows()).toBe(0);
  });

  it('refuses an indexed attempt redelivered after newer attempts of its key wait in the tail', () => {
    const first = indexedFirstOfThree();
    // k1 gets a tail entry again; its older attempt is only in the index.
    store.transaction(() => expect(store.attemptLog.append('k1', attempt('k1', 'b', 1))).toBe(true));
    store.transaction(() => expect(store.attemptLog.append('k1', { ...first })).toBe(false));
    // A key the index does not hold, appended twice in the tail, is not read from the index.
    store.transaction(() => expect(store.attemptLog.append('k4', attempt('k4', 'a'))).toBe(true));
    store.transaction(() => expect(store.attemptLog.append('k4', attempt('k4', 'b', 1))).toBe(true));
    expect(store.attemptLog.attemptsOf('k1').map((a) => a.placement.node)).toEqual(['a', 'b']);
    expect(store.attemptLog.attemptsOf('k4').map((a) => a.placement.node)).toEqual(['a', 'b']);
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

  it("keeps where a key's unindexed attempts were written, not the objects, and reads them back", () => {
    store.close();
    store = open(1000);
    const first = attempt('k1', 'a');
    const second = attempt('k1', 'b', 1);
    store.transaction(() => store.attemptLog.append('k1', first));
    store.transaction(() => store.attemptLog.append('k1', second));
    const written = [structuredClone(first), structuredClone(second)];
    // The appended objects are the extractor's; the tail must not be what keeps them alive.
    first.placement = { ...first.placement, node: 'changed' };
    second.operation = 'changed';
    expect(indexedRows()).toBe(0);
    expect(store.attemptLog.attemptsOf('k1')).toEqual(written);
    expect(store.attemptsOfKey('k1')).toEqual(written);
    // Redeliveries are still refused by span and trace id; the same span id in another trace is not one.
    store.transaction(() => {
      expect(store.attemptLog.append('k1', { ...written[1]! })).toBe(false);
      expect(
        store.attemptLog.append('k1', { ...written[1]!, traceId: 'ffffffffffffffffffffffffffffffff' }),
      ).toBe(true);
    });
    expect(store.counts().attempts).toBe(3);
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
    store.transaction(() => store.attemptLog.append('old', attempt('old', 'a', 0)));
    store.transaction(() => store.attemptLog.append('new', attempt('new', 'a', 100_000)));
    const removed = store.purge({
      attemptsBeforeUnixMillis: TEST_EPOCH_UNIX_MILLIS + 50_000,
      recordsBeforeUnixMillis: 0,
      maxRows: 10,
    });
    expect(removed).toBe(1);
    expect(indexedRows()).toBe(1);
    expect(batches().map((batch) => batch.keys.map(([key]) => key))).toEqual([['new']]);
    expect(store.attemptsOfKey('old')).toEqual([]);
    expect(store.attemptsOfKey('new')).toHaveLength(1);
  });

  it('finds the batches past the horizon through their end time, not by reading every batch', () => {
    for (let i = 0; i < 20; i++)
      store.transaction(() => store.attemptLog.append(`k${i}`, attempt(`k${i}`, 'a', i)));
    const plan = connectionOf(store)
      .prepare(`EXPLAIN QUERY PLAN ${EXPIRED_BATCHES}`)
      .all(TEST_EPOCH_UNIX_MILLIS, 10, 5) as { detail: string }[];
    expect(plan.map(({ detail }) => detail)).toEqual([
      'SEARCH attempt_batches USING INDEX attempt_batches_by_end (end_ms<?)',
    ]);
    expect(purgeBefore(store, 0)).toBe(0);
    expect(purgeBefore(store, 10)).toBeGreaterThan(0);
  });

  it('keeps a batch until every attempt in it is past the horizon', () => {
    store.transaction(() => {
      store.attemptLog.append('old', attempt('old', 'a', 0));
      store.attemptLog.append('late', attempt('late', 'a', 100));
    });
    store.transaction(() => store.attemptLog.append('next', attempt('next', 'a', 200)));
    const purge = (beforeSecond: number) => purgeBefore(store, beforeSecond);
    expect(purge(50)).toBe(0);
    expect(store.attemptsOfKey('old')).toHaveLength(1);
    expect(purge(150)).toBe(2);
    expect(store.attemptsOfKey('old')).toEqual([]);
    expect(store.attemptsOfKey('late')).toEqual([]);
    expect(indexedRows()).toBe(1);
  });

  it('writes one row per transaction, however many keys and attempts it appends', () => {
    store.close();
    store = open(1000);
    store.transaction(() => {
      store.attemptLog.append('k1', attempt('k1', 'a', 0));
      store.attemptLog.append('k2', attempt('k2', 'a', 1));
      store.attemptLog.append('k1', attempt('k1', 'b', 2));
    });
    store.transaction(() => store.attemptLog.append('k1', attempt('k1', 'c', 3)));
    const rows = batches();
    expect(rows.map((row) => [row.endUnixMillis, row.attempts, row.keys.map(([key]) => key)])).toEqual([
      [TEST_EPOCH_UNIX_MILLIS + 2_100, 3, ['k1', 'k2']],
      [TEST_EPOCH_UNIX_MILLIS + 3_100, 1, ['k1']],
    ]);
    expect(entriesOf(rows[0]!, 'k1')).toHaveLength(2);
    expect(entriesOf(rows[0]!, 'k2')).toHaveLength(1);
    expect(store.attemptLog.attemptsOf('k1').map((a) => a.placement.node)).toEqual(['a', 'b', 'c']);
    expect(store.counts().attempts).toBe(4);
  });

  it('stores a key once per batch and attempts positionally, and reads every kind back whole', () => {
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
    const rows = batches();
    expect(rows).toHaveLength(1);
    // Kinds as codes: 0 server, 1 client, 2 arrival.
    expect(
      entriesOf(rows[0]!, 'k1').map((entry) => [
        entry[ENTRY.traceId],
        entry[ENTRY.spanId],
        entry[ENTRY.kind],
      ]),
    ).toEqual(attempts.map((a, i) => [a.traceId, a.spanId, i]));
    expect(rows[0]!.body.match(/"k1"/g)).toHaveLength(1);
    const read = store.attemptLog.attemptsOf('k1');
    expect(read).toEqual(attempts);
    expect(read.map((a) => Object.keys(a))).toEqual(attempts.map((a) => Object.keys(a)));
  });

  it('keeps how a request ended and side effects, and adds nothing for a request that succeeded silently', () => {
    store.close();
    store = open(1);
    const attempts = [
      server({
        key: 'k1',
        node: 'a',
        statusCode: 503,
        effect: 'none',
        released: true,
        effectSpansDeclared: true,
      }),
      arrival({ key: 'k1', node: 'a', statusCode: 500, failed: true, effect: 'committed' }),
      effect({ key: 'k1', node: 'a', failed: true }),
      effect({ key: 'k1', node: 'b' }),
      server({ key: 'k1', node: 'b' }),
      arrival({ key: 'k1', node: 'b' }),
    ];
    store.transaction(() => {
      for (const a of attempts) store.attemptLog.append('k1', a);
    });
    const read = store.attemptLog.attemptsOf('k1');
    expect(read).toEqual(attempts);
    expect(read.map((a) => Object.keys(a))).toEqual(attempts.map((a) => Object.keys(a)));
    const entries = entriesOf(batches()[0]!, 'k1');
    // 503·8 + failed·4 + released·2 + declared·1, then the effect; a silent success writes neither.
    expect(entries[0]!.slice(SERVER.result)).toEqual([503 * 8 + 4 + 2 + 1, 'none']);
    expect(entries[2]![ENTRY.kind]).toBe(3);
    expect(entries[4]).toHaveLength(SERVER.result);
    expect(entries[5]).toHaveLength(ARRIVAL.result);
  });

  it('writes a trace id once while the entries after it share it, and times after the first start', () => {
    store.close();
    store = open(1);
    const start = TEST_EPOCH_UNIX_MILLIS + 0.125;
    const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const attempts = [
      { ...client({ key: 'k1', traceId: trace }), startUnixMillis: start, endUnixMillis: start + 250.5 },
      {
        ...server({ key: 'k1', traceId: trace, node: 'a' }),
        startUnixMillis: start + 1.25,
        endUnixMillis: start + 3,
      },
      // Another trace (a retry), starting before the first, ending before it starts (clock skew).
      { ...server({ key: 'k1', node: 'b' }), startUnixMillis: start - 40, endUnixMillis: start - 50 },
      // A start of 0 next to today's, and an end that would not read back as an offset from it.
      { ...arrival({ key: 'k1', traceId: trace }), startUnixMillis: 0, endUnixMillis: 0.1 },
    ];
    store.transaction(() => {
      for (const a of attempts) store.attemptLog.append('k1', a);
    });
    const [batch] = batches();
    expect(arrayOf(batch!, 'k1')[SEGMENT.baseStartUnixMillis]).toBe(start);
    expect(
      entriesOf(batch!, 'k1').map((entry) => [entry[ENTRY.traceId], entry[ENTRY.start], entry[ENTRY.end]]),
    ).toEqual([
      [trace, 0, 250.5],
      [0, 1.25, 1.75],
      [attempts[2]!.traceId, -40, -10],
      [trace, -start, 0.1],
    ]);
    expect(batch!.body.split(trace)).toHaveLength(3);
    expect(store.attemptLog.attemptsOf('k1')).toEqual(attempts);
    // A start and end far apart: the end is written whole rather than as an offset that rounds.
    store.transaction(() =>
      store.attemptLog.append('k2', {
        ...arrival({ key: 'k2' }),
        startUnixMillis: start,
        endUnixMillis: 0.1,
      }),
    );
    expect(entriesOf(batches()[1]!, 'k2')[0]![ENTRY.end]).toEqual([0.1]);
    expect(store.attemptLog.attemptsOf('k2')[0]!.endUnixMillis).toBe(0.1);
  });

  it('splits a large transaction into rows of about 64 KiB, every key readable from its bytes', () => {
    store.close();
    store = open(1);
    const appended = Array.from({ length: 3_000 }, (_, i) =>
      server({ key: i % 3 === 0 ? `clé-${i}-🚀` : `k-${i}`, node: `nœud-${i % 7}`, store: 'A' }),
    );
    store.transaction(() => {
      for (const a of appended) store.attemptLog.append(a.key, a);
    });
    const rows = batches();
    const sizes = rows.map((row) => Buffer.byteLength(row.body));
    // Over 256 KiB in all; each row closes at the key that takes it past 64 KiB.
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBeGreaterThan(4 * 64 * 1024);
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const size of sizes) expect(size).toBeLessThan(64 * 1024 + 1024);
    expect(rows.reduce((sum, row) => sum + row.attempts, 0)).toBe(appended.length);
    expect(rows.flatMap((row) => row.keys.map(([key]) => key))).toEqual(appended.map((a) => a.key));
    for (const a of appended) expect(store.attemptLog.attemptsOf(a.key)).toEqual([a]);
  });

  it('stores each placement once and refers to it by id from every entry', () => {
    store.transaction(() => {
      store.attemptLog.append('k1', attempt('k1', 'a'));
      store.attemptLog.append('k2', attempt('k2', 'b'));
    });
    store.transaction(() => store.attemptLog.append('k3', attempt('k3', 'a')));
    expect(connectionOf(store).prepare('SELECT node FROM placements ORDER BY id').pluck().all()).toEqual([
      'a',
      'b',
    ]);
    const [first, second] = batches();
    expect(entriesOf(first!, 'k2')[0]![ENTRY.placementId]).toBe(2);
    expect(entriesOf(second!, 'k3')[0]![ENTRY.placementId]).toBe(1);
    expect(first!.body).not.toContain('"payments"');
    expect(store.attemptLog.attemptsOf('k3')[0]!.placement).toMatchObject({ service: 'payments', node: 'a' });
  });

  it('gives up the ids of placements inserted by a failed transaction', () => {
    store.close();
    store = open(1000);
    const onX = activity({ node: 'x', fromSecond: 0, toSecond: 1, spans: 1 });
    expect(() =>
      store.transaction(() => {
        store.recordActivity(onX); // inserts x's placement
        throw new Error('the detector failed');
      }),
    ).toThrow('the detector failed');
    // y now takes the id x had; x, seen again, must get another.
    const onY = attempt('k2', 'y');
    store.transaction(() => store.attemptLog.append('k2', onY));
    const alsoOnX = { ...attempt('k1', 'x'), placement: onX[0]!.placement };
    store.transaction(() => store.attemptLog.append('k1', alsoOnX));
    store.close();
    store = open(1000);
    expect(store.attemptLog.attemptsOf('k1')).toEqual([alsoOnX]);
    expect(store.attemptLog.attemptsOf('k2')).toEqual([onY]);
  });

  it('reads one key’s bytes of a batch whatever the other keys hold, multi-byte text included', () => {
    store.close();
    store = open(1);
    const accented = server({ key: 'clé-1', node: 'nœud-α', store: 'A', tenant: 'société' });
    const emoji = server({ key: 'k-🚀', node: 'b', store: 'B' });
    const plain = server({ key: 'k3', node: 'c', store: 'C' });
    store.transaction(() => {
      store.attemptLog.append(accented.key, accented);
      store.attemptLog.append(emoji.key, emoji);
      store.attemptLog.append(plain.key, plain);
    });
    expect(batches()).toHaveLength(1);
    expect(store.attemptLog.attemptsOf('k-🚀')).toEqual([emoji]);
    expect(store.attemptLog.attemptsOf('k3')).toEqual([plain]);
    expect(store.attemptsOfKey('clé-1')).toEqual([accented]);
  });

  it('refuses a redelivery after a restart: the key filter is built from the index at open', () => {
    const first = indexedFirstOfThree();
    store.close();
    store = open(1000);
    store.transaction(() => expect(store.attemptLog.append('k1', { ...first })).toBe(false));
    expect(store.attemptLog.attemptsOf('k1').map((a) => a.spanId)).toEqual([first.spanId]);
  });

  describe('a key index holding a long history', () => {
    /** Random-looking keys, as idempotency keys are (UUIDs): they land all over a sorted index. */
    const keyOf = (i: number) => `key-${(Math.imul(i + 1, 0x9e3779b1) >>> 0).toString(16)}-${i}`;
    /** Each key's attempt, by the key's number. */
    const appended: ReturnType<typeof attempt>[] = [];
    /** Appends an attempt of each key `from` to `to` - 1, `batch` per transaction (each indexes). */
    const appendKeys = (from: number, to: number, batch: number) => {
      for (let at = from; at < to; at += batch) {
        store.transaction(() => {
          for (let i = at; i < Math.min(to, at + batch); i++) {
            appended[i] = attempt(keyOf(i), 'a');
            store.attemptLog.append(keyOf(i), appended[i]!);
          }
        });
      }
    };
    /** WAL frames (pages) the store's commits wrote during `work`, with no checkpoint between. */
    const pagesWrittenBy = (work: () => void): number => {
      const db = connectionOf(store);
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.pragma('wal_autocheckpoint = 0');
      work();
      const [result] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
      return result!.log;
    };

    it('writes the pages of its newest generation only when it indexes, however many keys it holds', () => {
      store.close();
      store = open(2_000);
      // 200,000 keys in ~1,400 pages of index: 2,000 sorted random keys land on ~1,000 of them.
      appendKeys(0, 200_000, 2_000);
      const table = store.attemptLog as AttemptTable;
      // A generation takes indexings until it holds 16,384 entries: 9 of 2,000.
      expect(table.generations.map((g) => g.entries)).toEqual([...Array(11).fill(18_000), 2_000]);
      const pages = pagesWrittenBy(() => appendKeys(200_000, 202_000, 2_000));
      // The batch row itself is ~15 pages; its generation's part of the index a few dozen.
      expect(pages).toBeLessThan(150);
    });

    it('finds and refuses again the attempts of every generation, and after a restart', () => {
      store.close();
      store = open(2_000);
      appendKeys(0, 40_000, 2_000);
      const table = store.attemptLog as AttemptTable;
      expect(table.generations).toHaveLength(3);
      const sampled = [0, 17_999, 18_000, 35_999, 36_000, 39_999];
      const answersRightly = () => {
        for (const i of sampled) expect(store.attemptLog.attemptsOf(keyOf(i))).toEqual([appended[i]]);
        expect(store.attemptsOfKey(keyOf(18_000))).toEqual([appended[18_000]]);
        store.transaction(() => {
          for (const i of sampled) expect(store.attemptLog.append(keyOf(i), { ...appended[i]! })).toBe(false);
        });
      };
      answersRightly();
      store.close();
      store = open(2_000);
      expect((store.attemptLog as AttemptTable).generations).toEqual(table.generations);
      answersRightly();
    });

    it('drops a generation once retention purged every entry of it', () => {
      store.close();
      store = open(2_000);
      appendKeys(0, 40_000, 2_000);
      const table = store.attemptLog as AttemptTable;
      const [first, second] = table.generations;
      // Every attempt ends at the same time: purging before a later one takes them all, oldest first.
      while (table.generations[0]!.id === first!.id) {
        store.purge({
          attemptsBeforeUnixMillis: TEST_EPOCH_UNIX_MILLIS + 86_400_000,
          recordsBeforeUnixMillis: 0,
          maxRows: 5_000,
        });
      }
      expect(table.generations[0]!.id).toBe(second!.id);
      expect(store.attemptLog.attemptsOf(keyOf(0))).toEqual([]);
      expect(store.attemptLog.attemptsOf(keyOf(39_999))).toEqual([appended[39_999]]);
    });
  });

  it('rebuilds its key filter a step per commit once it is full, answering rightly all along', () => {
    store.close();
    store = open(10_000);
    const table = store.attemptLog as AttemptTable;
    const keys = 70_000; // past the filter's first capacity (65,536)
    const firsts: ReturnType<typeof attempt>[] = [];
    for (let from = 0; from < keys; from += 10_000) {
      store.transaction(() => {
        for (let i = from; i < from + 10_000; i++) {
          const a = attempt(`key-${i}`, 'a');
          if (i % 997 === 0) firsts.push(a);
          store.attemptLog.append(a.key, a);
        }
      });
    }
    expect(indexedRows()).toBe(keys);
    const answersRightly = () => {
      store.transaction(() => {
        for (const a of firsts) expect(store.attemptLog.append(a.key, { ...a })).toBe(false);
      });
      for (const a of firsts) expect(store.attemptLog.attemptsOf(a.key)).toEqual([a]);
    };
    // The last indexing found the filter full; its commit read the first 4,096 keys into a new one.
    expect(table.keyFilter).toEqual({ capacity: 65_536, rebuilding: true });
    answersRightly();
    // Each commit reads 4,096 more (answersRightly committed one); a key appended meanwhile is
    // indexed into the new filter too (a purge indexes what waits).
    const late = attempt('key-late', 'a');
    store.transaction(() => store.attemptLog.append(late.key, late));
    store.purge({ attemptsBeforeUnixMillis: 0, recordsBeforeUnixMillis: 0, maxRows: 1 });
    let commits = 4; // the indexing's, answersRightly's, the late key's, the purge's
    while (table.keyFilter.rebuilding) {
      store.transaction(() => {});
      commits++;
    }
    // A step reads again the key the step before ended on: 4,095 new keys a commit.
    expect(commits).toBe(Math.ceil((keys + 1) / 4_095));
    expect(table.keyFilter).toEqual({ capacity: 2 * keys, rebuilding: false });
    answersRightly();
    store.transaction(() => expect(store.attemptLog.append(late.key, { ...late })).toBe(false));
  });

  it('takes only its own attempts with it when a nested transaction fails', () => {
    const outer = attempt('k1', 'a');
    const inner = attempt('k2', 'a');
    store.close();
    store = open(1000);
    store.transaction(() => {
      store.attemptLog.append('k1', outer);
      expect(() =>
        store.transaction(() => {
          store.attemptLog.append('k2', inner);
          throw new Error('constraint');
        }),
      ).toThrow('constraint');
    });
    expect(store.attemptLog.attemptsOf('k1')).toEqual([outer]);
    expect(store.attemptLog.attemptsOf('k2')).toEqual([]);
    store.transaction(() => expect(store.attemptLog.append('k2', { ...inner })).toBe(true));
    expect(store.counts().attempts).toBe(2);
  });

  it('refuses an append outside a transaction, which would never be written', () => {
    expect(() => store.attemptLog.append('k1', attempt('k1', 'a'))).toThrow(
      'inside KeyscopeStore.transaction',
    );
  });

  describe('a hot key (one key on many requests)', () => {
    /** Appends `count` attempts of `key`, `perTransaction` a transaction; returns them. */
    const appendMany = (key: string, count: number, perTransaction = 100, fromSecond = 0) => {
      const appended = Array.from({ length: count }, (_, i) =>
        attempt(key, `n${i % 4}`, fromSecond + i / 100),
      );
      for (let from = 0; from < count; from += perTransaction) {
        store.transaction(() => {
          for (const a of appended.slice(from, from + perTransaction)) store.attemptLog.append(key, a);
        });
      }
      return appended;
    };

    it('checks redeliveries without reading its history: no attempt read per append at 10,000 as at 1,000', () => {
      const readPerAppend = (history: number) => {
        store.close();
        rmSync(path);
        store = open(500);
        const earlier = appendMany('undefined', history);
        const table = store.attemptLog as AttemptTable;
        const before = table.attemptsRead;
        const fresh = Array.from({ length: 100 }, (_, i) => attempt('undefined', 'n0', 1_000 + i));
        store.transaction(() => {
          for (const a of fresh) expect(store.attemptLog.append('undefined', a)).toBe(true);
          // Redeliveries of indexed attempts, of ones waiting in the tail and of this transaction's.
          for (const a of [earlier[0]!, earlier.at(-1)!, fresh[0]!])
            expect(store.attemptLog.append('undefined', { ...a })).toBe(false);
        });
        const read = (table.attemptsRead - before) / 103;
        expect(store.attemptLog.attemptsOf('undefined')).toHaveLength(history + 100);
        return read;
      };
      expect(readPerAppend(1_000)).toBe(0);
      expect(readPerAppend(10_000)).toBe(0);
    });

    it('takes back an attempt of a failed transaction, and still refuses what was committed', () => {
      const committed = appendMany('hot', 200);
      const lost = attempt('hot', 'n0', 500);
      expect(() =>
        store.transaction(() => {
          expect(store.attemptLog.append('hot', lost)).toBe(true);
          throw new Error('disk full');
        }),
      ).toThrow('disk full');
      store.transaction(() => {
        expect(store.attemptLog.append('hot', { ...lost })).toBe(true);
        expect(store.attemptLog.append('hot', { ...committed[0]! })).toBe(false);
        expect(store.attemptLog.append('hot', { ...committed[150]! })).toBe(false);
      });
      expect(store.attemptLog.attemptsOf('hot')).toHaveLength(201);
    });

    it('refuses a redelivery of an attempt still kept after a purge took its older ones', () => {
      appendMany('hot', 100, 100, 0);
      const recent = appendMany('hot', 100, 100, 100);
      expect(purgeBefore(store, 50)).toBe(100);
      store.transaction(() => {
        expect(store.attemptLog.append('hot', { ...recent[0]! })).toBe(false);
        expect(store.attemptLog.append('hot', attempt('hot', 'n1', 300))).toBe(true);
      });
      expect(store.attemptLog.attemptsOf('hot')).toHaveLength(101);
    });
  });
});
