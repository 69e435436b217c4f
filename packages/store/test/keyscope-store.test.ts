import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Attempt, ExtractedAttempts, NodeActivity } from '@keyscope/attempts';
import { createDetector, type Detector } from '@keyscope/detector';
import { isKeyscopeError } from '@keyscope/errors';
import { activity, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyscopeStore } from '../src/index.ts';
import { connectionOf } from '../src/keyscope-store.ts';
import { fillDisk } from '../src/testing.ts';
import { purgeBefore } from './purge-before.ts';
import { committedValue, onSecondConnection } from './second-connection.ts';

function batch(attempts: Attempt[]): ExtractedAttempts {
  return { attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } };
}

/** Two executions of `key` in two node stores: one cross-store duplicate. */
function duplicate(key: string, at: number, tenant = ''): Attempt[] {
  return [
    server({ key, tenant, node: 'a', store: 'A', at }),
    server({ key, tenant, node: 'b', store: 'B', at: at + 2 }),
  ];
}

let dir: string;
let store: KeyscopeStore;
const dbPath = () => join(dir, 'keyscope.db');
/** Rows the store's own connection changed since it opened: the work its writes did. */
const rowsChanged = (of: KeyscopeStore) =>
  connectionOf(of).prepare('SELECT total_changes()').pluck().get() as number;
let detector: Detector;

function ingest(attempts: Attempt[]): void {
  store.transaction(() => store.applyChanges(detector.ingest(batch(attempts))));
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-store-'));
  store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
  detector = createDetector(undefined, { attemptLog: store.attemptLog });
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('schema', () => {
  it('keeps data across reopening and does not re-run migrations', () => {
    ingest(duplicate('k1', 0));
    store.close();
    store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
    expect(store.counts()).toMatchObject({ attempts: 2, findings: 1, incidents: 1 });
  });

  it('refuses a database written by a newer schema', () => {
    store.close();
    const raw = new BetterSqlite3(join(dir, 'keyscope.db'));
    raw.pragma('user_version = 99');
    raw.close();
    try {
      store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
      expect.unreachable();
    } catch (error) {
      expect(isKeyscopeError(error) && error.code).toBe('KS_STORE_NEWER_SCHEMA');
    }
    store = new KeyscopeStore({ path: ':memory:' });
  });
});

describe('attempt log', () => {
  it('refuses a redelivered attempt and returns a key’s attempts', () => {
    const attempt = server({ key: 'k1' });
    store.transaction(() => {
      expect(store.attemptLog.append('k1', attempt)).toBe(true);
      expect(store.attemptLog.append('k1', { ...attempt })).toBe(false);
    });
    expect(store.attemptLog.attemptsOf('k1')).toEqual([attempt]);
    expect(store.attemptsOfKey('k1')).toEqual([attempt]);
  });

  it('finds a key’s attempts under every tenant it was used by, and no other key’s', () => {
    const acme = server({ key: 'k1', tenant: 'acme' });
    const globex = server({ key: 'k1', tenant: 'globex' });
    store.transaction(() => {
      store.attemptLog.append('k1\u0000acme', acme);
      store.attemptLog.append('k1\u0000globex', globex);
      store.attemptLog.append('k10', server({ key: 'k10' }));
    });
    expect(
      store
        .attemptsOfKey('k1')
        .map((a) => a.tenant)
        .sort(),
    ).toEqual(['acme', 'globex']);
    expect(store.attemptsOfKey('k1', 'acme')).toEqual([acme]);
  });

  it('rolls back the attempts of a failed transaction', () => {
    expect(() =>
      store.transaction(() => {
        store.attemptLog.append('k1', server({ key: 'k1' }));
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(store.attemptLog.attemptsOf('k1')).toEqual([]);
  });
});

describe('findings', () => {
  it('stores the detector’s findings and filters them by class, service, key and time', () => {
    ingest([...duplicate('k1', 0), ...duplicate('k2', 100)]);
    expect(store.findings.list({}, { limit: 10 }).items.map((f) => f.key)).toEqual(['k2', 'k1']);
    expect(store.findings.list({ key: 'k1' }, { limit: 10 }).items).toHaveLength(1);
    expect(store.findings.list({ class: 'key_collision' }, { limit: 10 }).items).toHaveLength(0);
    expect(store.findings.list({ service: 'payments' }, { limit: 10 }).items).toHaveLength(2);
    const since = TEST_EPOCH_UNIX_MILLIS + 50_000;
    expect(store.findings.list({ sinceUnixMillis: since }, { limit: 10 }).items.map((f) => f.key)).toEqual([
      'k2',
    ]);
    expect(store.findings.list({ untilUnixMillis: since }, { limit: 10 }).items.map((f) => f.key)).toEqual([
      'k1',
    ]);
  });

  it('filters findings by incident', () => {
    ingest([
      ...duplicate('k1', 0),
      server({ key: 'r1', service: 'refunds', node: 'a', store: 'RA', at: 0 }),
      server({ key: 'r1', service: 'refunds', node: 'b', store: 'RB', at: 2 }),
    ]);
    const incidents = store.incidents.list({}, { limit: 10 }).items;
    expect(incidents).toHaveLength(2);
    for (const incident of incidents) {
      const keys = store.findings.list({ incidentId: incident.id }, { limit: 10 }).items.map((f) => f.key);
      expect(keys).toEqual([incident.service === 'refunds' ? 'r1' : 'k1']);
    }
    expect(store.findings.list({ incidentId: 'inc_none' }, { limit: 10 }).items).toEqual([]);
  });

  it('pages with a cursor that stays stable while new findings are inserted', () => {
    for (let i = 0; i < 5; i++) ingest(duplicate(`k${i}`, i * 10));
    const first = store.findings.list({}, { limit: 2 });
    expect(first.items.map((f) => f.key)).toEqual(['k4', 'k3']);
    for (let i = 5; i < 8; i++) ingest(duplicate(`k${i}`, i * 10));
    const second = store.findings.list({}, { limit: 2, cursor: first.nextCursor! });
    const third = store.findings.list({}, { limit: 2, cursor: second.nextCursor! });
    expect([...second.items, ...third.items].map((f) => f.key)).toEqual(['k2', 'k1', 'k0']);
    expect(third.nextCursor).toBeNull();
  });

  it('rejects a cursor it did not issue', () => {
    try {
      store.findings.list({}, { limit: 2, cursor: 'bm9wZQ' });
      expect.unreachable();
    } catch (error) {
      expect(isKeyscopeError(error) && error.code).toBe('KS_CURSOR_INVALID');
    }
  });

  it('shows a tenant only the findings that involve it', () => {
    ingest([...duplicate('k1', 0, 'acme'), ...duplicate('k2', 10, 'globex')]);
    expect(store.findings.list({ tenant: 'acme' }, { limit: 10 }).items.map((f) => f.key)).toEqual(['k1']);
    expect(store.incidents.list({ tenant: 'globex' }, { limit: 10 }).items).toHaveLength(1);
    const incident = store.incidents.list({}, { limit: 10 }).items[0]!;
    expect(store.findings.ofIncident(incident.id, 'acme').map((f) => f.key)).toEqual(['k1']);
    expect(store.attemptsOfKey('k1', 'globex')).toEqual([]);
  });

  it('deletes retracted findings and incidents', () => {
    ingest([
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', outcome: 'error', at: 1 }),
    ]);
    expect(store.findings.list({}, { limit: 10 }).items.map((f) => f.class)).toEqual(['scope_violation']);
    ingest([server({ key: 'k1', node: 'b', store: 'B', at: 5 })]);
    expect(store.findings.list({}, { limit: 10 }).items.map((f) => f.class)).toEqual([
      'cross_store_duplicate',
    ]);
    expect(store.counts().incidents).toBe(1);
  });
});

describe('incidents', () => {
  it('acknowledges once and records who did it', () => {
    ingest(duplicate('k1', 0));
    const id = store.incidents.list({}, { limit: 1 }).items[0]!.id;
    expect(store.incidents.acknowledge(id, 'alice', 1000)).toMatchObject({
      acknowledged: true,
      acknowledgedBy: 'alice',
    });
    expect(store.incidents.acknowledge(id, 'bob', 2000)).toMatchObject({
      acknowledgedBy: 'alice',
      acknowledgedUnixMillis: 1000,
    });
  });

  it('keeps a manual resolve until the incident gains keys', () => {
    ingest(duplicate('k1', 0));
    const id = store.incidents.list({}, { limit: 1 }).items[0]!.id;
    expect(store.incidents.resolve(id, 'alice', 1000)?.status).toBe('resolved');
    ingest([server({ key: 'k1', node: 'c', store: 'C', at: 3 })]);
    expect(store.incidents.get(id)?.status).toBe('resolved');
    ingest(duplicate('k2', 5));
    expect(store.incidents.get(id)).toMatchObject({ status: 'open', keys: 2, resolvedBy: null });
    expect(store.incidents.list({ status: 'open' }, { limit: 10 }).items).toHaveLength(1);
  });
});

describe('outbox', () => {
  it('enqueues one delivery per sink and dedup key, and retries failed ones when due', () => {
    const entry = {
      sink: 'pagerduty',
      dedupKey: 'inc_1:trigger',
      incidentId: 'inc_1',
      payload: { a: 1 },
      dueUnixMillis: 0,
    };
    expect(store.outbox.enqueue(entry)).toBe(true);
    expect(store.outbox.enqueue(entry)).toBe(false);
    const [due] = store.outbox.due(10, 10);
    expect(due).toMatchObject({ sink: 'pagerduty', payload: { a: 1 }, attempts: 0 });
    store.outbox.markFailed(due!.id, 'connection refused', 500);
    expect(store.outbox.due(100, 10)).toEqual([]);
    expect(store.outbox.due(500, 10)[0]).toMatchObject({ attempts: 1 });
    store.outbox.markDelivered(due!.id, 600);
    expect(store.outbox.pending()).toBe(0);
  });
});

describe('retention', () => {
  it('purges attempts past the horizon and resolved records past retention, in chunks', () => {
    // k2 is in a later hour, so in an incident of its own that stays. A transaction's attempts
    // are one row, purged once all of them are past the horizon: these are two.
    ingest(duplicate('k1', 0));
    ingest(duplicate('k2', 4000));
    const early = store.incidents.list({ untilUnixMillis: TEST_EPOCH_UNIX_MILLIS + 3000 }, { limit: 10 })
      .items[0]!;
    store.incidents.resolve(early.id, 'alice', 0);
    const cutoff = TEST_EPOCH_UNIX_MILLIS + 3_000_000;
    let removed = 0;
    for (let round = 0; round < 10; round++) {
      const chunk = store.purge({
        attemptsBeforeUnixMillis: cutoff,
        recordsBeforeUnixMillis: cutoff,
        maxRows: 1,
      });
      removed += chunk;
      if (chunk === 0) break;
    }
    expect(removed).toBe(4);
    expect(store.counts()).toMatchObject({ attempts: 2, findings: 1, incidents: 1 });
  });
});

/** Activity as [node, second's offset in ms, spans, errors], by node then time. */
function byNode(samples: NodeActivity[]): [string, number, number, number][] {
  return samples
    .map((a): [string, number, number, number] => [
      a.placement.node,
      a.bucketStartUnixMillis - TEST_EPOCH_UNIX_MILLIS,
      a.spans,
      a.errors,
    ])
    .sort((x, y) => x[0].localeCompare(y[0]) || x[1] - y[1]);
}

describe('node activity', () => {
  it('reads activity in time order, then by node, whether folded into a chunk or still in the log', () => {
    // The first three transactions are folded by the purge; the fourth stays in the log.
    for (const [node, second, spans] of [
      ['b', 1, 4],
      ['a', 2, 3],
      ['a', 1, 2],
    ] as const) {
      store.transaction(() =>
        store.recordActivity(activity({ node, fromSecond: second, toSecond: second + 1, spans })),
      );
    }
    purgeBefore(store, 0);
    expect(committedValue(dbPath(), 'SELECT count(*) FROM activity_chunks')).toBe(1);
    store.recordActivity(activity({ node: 'a', fromSecond: 2, toSecond: 3, spans: 5 }));
    const rows = store
      .recentActivity(60_000)
      .map((a) => [a.bucketStartUnixMillis - TEST_EPOCH_UNIX_MILLIS, a.placement.node, a.spans]);
    expect(rows).toEqual([
      [1000, 'a', 2],
      [1000, 'b', 4],
      [2000, 'a', 8],
    ]);
  });

  it('adds up the activity of batches and returns the recent window', () => {
    store.recordActivity(activity({ node: 'a', fromSecond: 0, toSecond: 10, spans: 3, errors: 1 }));
    store.recordActivity(activity({ node: 'a', fromSecond: 5, toSecond: 10, spans: 2 }));
    const recent = store.recentActivity(4000);
    expect(recent.map((a) => [a.bucketStartUnixMillis - TEST_EPOCH_UNIX_MILLIS, a.spans, a.errors])).toEqual([
      [5000, 5, 1],
      [6000, 5, 1],
      [7000, 5, 1],
      [8000, 5, 1],
      [9000, 5, 1],
    ]);
    expect(recent[0]!.placement).toMatchObject({ service: 'payments', node: 'a' });
  });

  it('writes a call’s samples as one log row, summed per node and bucket, and reads them before they are folded', () => {
    const changes = () => rowsChanged(store);
    const before = changes();
    store.recordActivity([
      ...activity({ node: 'a', fromSecond: 0, toSecond: 2, spans: 3, errors: 1 }),
      ...activity({ node: 'a', fromSecond: 0, toSecond: 2, spans: 4 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 1, spans: 1 }),
    ]);
    // One log row, and the placements of the two nodes, seen for the first time.
    expect(changes() - before).toBe(1 + 2);
    expect(JSON.parse(committedValue(dbPath(), 'SELECT body FROM activity_log') as string)).toHaveLength(3);
    expect(committedValue(dbPath(), 'SELECT count(*) FROM activity_chunks')).toBe(0);
    expect(byNode(store.recentActivity(4000))).toEqual([
      ['a', 0, 7, 1],
      ['a', 1000, 7, 1],
      ['b', 0, 1, 0],
    ]);
  });

  it('folds the log into one chunk every 64 transactions, and reads chunks and log together', () => {
    for (let i = 0; i < 63; i++) {
      store.transaction(() =>
        store.recordActivity(activity({ node: 'a', fromSecond: 0, toSecond: 2, spans: 1 })),
      );
    }
    expect(store.activityLogRows).toBe(63);
    expect(committedValue(dbPath(), 'SELECT count(*) FROM activity_chunks')).toBe(0);
    const changes = () => rowsChanged(store);
    const before = changes();
    store.transaction(() =>
      store.recordActivity(activity({ node: 'a', fromSecond: 0, toSecond: 2, spans: 1 })),
    );
    // One log row, one chunk, the log's 64 rows deleted, and the placement's time of last use
    // (placement-table.ts) written for the first time.
    expect(changes() - before).toBe(1 + 1 + 64 + 1);
    expect(store.activityLogRows).toBe(0);
    expect(committedValue(dbPath(), 'SELECT count(*) FROM activity_log')).toBe(0);
    expect(
      onSecondConnection(dbPath(), (db) =>
        db.prepare('SELECT first_bucket_ms, last_bucket_ms FROM activity_chunks').get(),
      ),
    ).toEqual({
      first_bucket_ms: TEST_EPOCH_UNIX_MILLIS,
      last_bucket_ms: TEST_EPOCH_UNIX_MILLIS + 1000,
    });
    expect(byNode(store.recentActivity(4000))).toEqual([
      ['a', 0, 64, 0],
      ['a', 1000, 64, 0],
    ]);
    // A sample still in the log, read with the chunk.
    store.recordActivity(activity({ node: 'a', fromSecond: 1, toSecond: 2, spans: 5 }));
    expect(byNode(store.recentActivity(4000))).toEqual([
      ['a', 0, 64, 0],
      ['a', 1000, 69, 0],
    ]);
  });

  it('purges a chunk once all its buckets are past the window', () => {
    store.transaction(() =>
      store.recordActivity(activity({ node: 'a', fromSecond: 0, toSecond: 3, spans: 1 })),
    );
    store.transaction(() =>
      store.recordActivity(activity({ node: 'a', fromSecond: 10, toSecond: 11, spans: 1 })),
    );
    const purge = (beforeSecond: number) => purgeBefore(store, beforeSecond);
    // The purge folds the log first: one chunk of seconds 0-2 and 10.
    expect(purge(2)).toBe(0);
    expect(committedValue(dbPath(), 'SELECT count(*) FROM activity_chunks')).toBe(1);
    store.transaction(() =>
      store.recordActivity(activity({ node: 'a', fromSecond: 20, toSecond: 21, spans: 1 })),
    );
    expect(purge(15)).toBe(1);
    expect(byNode(store.recentActivity(60_000))).toEqual([['a', 20_000, 1, 0]]);
  });

  it('keeps the latency histograms of the samples, summed per node and bucket, through log, fold and reopening', () => {
    const path = join(dir, 'keyscope.db');
    const fast = [0, 0, 0, 0, 3, 1, 0, 0, 0, 0, 0, 0];
    const slow = [0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0];
    store.transaction(() =>
      store.recordActivity(activity({ node: 'a', fromSecond: 0, toSecond: 2, spans: 4, latency: fast })),
    );
    purgeBefore(store, 0);
    expect(committedValue(dbPath(), 'SELECT count(*) FROM activity_chunks')).toBe(1);
    store.transaction(() =>
      store.recordActivity([
        ...activity({ node: 'a', fromSecond: 1, toSecond: 2, spans: 2, latency: slow }),
        // A sample without durations adds its counts and nothing to the histogram.
        ...activity({ node: 'a', fromSecond: 1, toSecond: 2, spans: 1 }),
        ...activity({ node: 'b', fromSecond: 1, toSecond: 2, spans: 1 }),
      ]),
    );
    const expected = [
      ['a', 0, 4, fast],
      ['a', 1000, 7, fast.map((count, i) => count + slow[i]!)],
      ['b', 1000, 1, undefined],
    ];
    const read = () =>
      store
        .recentActivity(4000)
        .map((a) => [a.placement.node, a.bucketStartUnixMillis - TEST_EPOCH_UNIX_MILLIS, a.spans, a.latency]);
    expect(read()).toEqual(expected);
    store.close();
    store = new KeyscopeStore({ path });
    expect(read()).toEqual(expected);
  });

  it('folds at open what an earlier process logged, and loses none of it', () => {
    const path = join(dir, 'keyscope.db');
    store.recordActivity(activity({ node: 'a', fromSecond: 0, toSecond: 2, spans: 3 }));
    store.recordActivity(activity({ node: 'b', fromSecond: 1, toSecond: 2, spans: 2, errors: 2 }));
    store.close();
    const raw = new BetterSqlite3(path);
    expect(raw.prepare('SELECT count(*) FROM activity_log').pluck().get()).toBe(2);
    raw.close();
    store = new KeyscopeStore({ path });
    expect(store.activityLogRows).toBe(0);
    expect(committedValue(path, 'SELECT count(*) FROM activity_log')).toBe(0);
    expect(byNode(store.recentActivity(4000))).toEqual([
      ['a', 0, 3, 0],
      ['a', 1000, 3, 0],
      ['b', 1000, 2, 2],
    ]);
  });

  it('forgets the activity of a transaction that failed, and of a savepoint rolled back', () => {
    store.recordActivity(activity({ node: 'a', fromSecond: 0, toSecond: 1, spans: 1 }));
    expect(() =>
      store.transaction(() => {
        store.recordActivity(activity({ node: 'a', fromSecond: 0, toSecond: 1, spans: 10 }));
        throw new Error('the detector failed');
      }),
    ).toThrow('the detector failed');
    store.transaction(() => {
      store.recordActivity(activity({ node: 'b', fromSecond: 0, toSecond: 1, spans: 2 }));
      expect(() =>
        store.transaction(() => {
          store.recordActivity(activity({ node: 'b', fromSecond: 0, toSecond: 1, spans: 20 }));
          throw new Error('a nested write failed');
        }),
      ).toThrow('a nested write failed');
    });
    expect(store.activityLogRows).toBe(2);
    expect(byNode(store.recentActivity(4000))).toEqual([
      ['a', 0, 1, 0],
      ['b', 0, 2, 0],
    ]);
  });
});

describe('write failures', () => {
  /** Appends `count` attempts of fresh keys in one transaction. */
  function append(from: number, count: number): void {
    store.transaction(() => {
      for (let i = from; i < from + count; i++)
        store.attemptLog.append(`key-${i}`, server({ key: `key-${i}` }));
    });
  }

  it('reports a full disk from the failed transaction until one writes again', () => {
    append(0, 10);
    expect(store.writeFailure).toBeUndefined();
    const disk = fillDisk(store);
    let failed: unknown;
    for (let round = 1; round <= 100 && failed === undefined; round++) {
      try {
        append(round * 1_000, 500);
      } catch (error) {
        failed = error;
      }
    }
    expect(isKeyscopeError(failed) && failed.code).toBe('KS_STORE_UNAVAILABLE');
    expect(store.writeFailure).toMatchObject({ code: 'SQLITE_FULL', failures: 1 });
    expect(() => append(200_000, 500)).toThrow();
    expect(store.writeFailure).toMatchObject({ code: 'SQLITE_FULL', failures: 2 });
    // A transaction with nothing to write commits on a full disk too: it proves nothing.
    store.transaction(() => {});
    expect(store.writeFailure?.code).toBe('SQLITE_FULL');

    disk.makeRoom();
    append(300_000, 10);
    expect(store.writeFailure).toBeUndefined();
  });

  it('probes whether the storage takes writes again, without leaving a row behind', () => {
    // Enough to fill the page a new database has free (the root of the key index's first table,
    // dropped by the migration that made it generations), so the cap leaves no room at all.
    append(0, 2_000);
    const disk = fillDisk(store);
    expect(() => {
      for (let round = 1; round <= 100; round++) append(round * 1_000, 500);
    }).toThrow();
    expect(store.probeWrite()).toBe(false);
    expect(store.writeFailure?.code).toBe('SQLITE_FULL');

    disk.makeRoom();
    expect(store.probeWrite()).toBe(true);
    expect(store.writeFailure).toBeUndefined();
    expect(store.state.load('write-probe')).toBeUndefined();
  });

  it('does not report a transaction that failed for a reason of its own', () => {
    expect(() =>
      store.transaction(() => {
        store.attemptLog.append('k1', server({ key: 'k1' }));
        throw new Error('the detector failed');
      }),
    ).toThrow('the detector failed');
    expect(store.writeFailure).toBeUndefined();
  });
});
