import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Attempt } from '@keyscope/attempts';
import { createDetector, type RoutingEvent } from '@keyscope/detector';
import { isKeyscopeError } from '@keyscope/errors';
import { activity, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AttemptTable } from '../src/attempt-table.ts';
import { KeyscopeStore } from '../src/index.ts';
import { connectionOf } from '../src/keyscope-store.ts';
import { KEYSCOPE_APPLICATION_ID, MIGRATIONS, migrate } from '../src/migrations.ts';

let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-migrations-'));
  path = join(dir, 'keyscope.db');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `work` on a plain connection to the test's database file. */
function onDatabase<T>(work: (db: BetterSqlite3.Database) => T): T {
  const db = new BetterSqlite3(path);
  try {
    return work(db);
  } finally {
    db.close();
  }
}

const tables = (db: BetterSqlite3.Database) =>
  db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();

/** The code of what `work` throws. */
function codeOf(work: () => unknown): string | undefined {
  try {
    work();
  } catch (error) {
    return isKeyscopeError(error) ? error.code : `not a KeyscopeError: ${String(error)}`;
  }
  return undefined;
}

describe('migrations', () => {
  const first = 'CREATE TABLE first (id INTEGER PRIMARY KEY);';
  const second = 'CREATE TABLE second (id INTEGER PRIMARY KEY);';

  it('applies each migration a database lacks once, and counts them in user_version', () => {
    onDatabase((db) => {
      expect(migrate(db, path, [first])).toBe(1);
      expect(migrate(db, path, [first, second])).toBe(2);
      // Run again, neither CREATE TABLE runs (it would fail on the table it made).
      expect(migrate(db, path, [first, second])).toBe(2);
      expect(db.pragma('user_version', { simple: true })).toBe(2);
      expect(db.pragma('application_id', { simple: true })).toBe(KEYSCOPE_APPLICATION_ID);
      expect(tables(db)).toEqual(['first', 'second']);
    });
  });

  it('leaves a database at the version before a migration that fails, with nothing of it applied', () => {
    onDatabase((db) => {
      const failing = `CREATE TABLE half (id INTEGER PRIMARY KEY); INSERT INTO missing VALUES (1);`;
      expect(() => migrate(db, path, [first, failing])).toThrow('no such table: missing');
      expect(db.pragma('user_version', { simple: true })).toBe(1);
      expect(tables(db)).toEqual(['first']);
      expect(migrate(db, path, [first, second])).toBe(2);
    });
  });

  it('refuses a database written by a newer keyscope before running anything', () => {
    onDatabase((db) => {
      migrate(db, path, [first, second]);
      expect(codeOf(() => migrate(db, path, [first]))).toBe('KS_STORE_NEWER_SCHEMA');
    });
  });

  it('refuses a database written by a pre-release build, and leaves it as it was', () => {
    // Pre-release builds counted their schema in user_version (up to 12) and set no application id.
    onDatabase((db) => {
      db.exec('CREATE TABLE attempt_batches (id INTEGER PRIMARY KEY)');
      db.pragma('user_version = 12');
    });
    expect(codeOf(() => new KeyscopeStore({ path }))).toBe('KS_STORE_PRE_RELEASE_SCHEMA');
    // A version this build's schema has too (1) does not make it one of this build's databases.
    onDatabase((db) => db.pragma('user_version = 1'));
    expect(codeOf(() => new KeyscopeStore({ path }))).toBe('KS_STORE_PRE_RELEASE_SCHEMA');
    onDatabase((db) => {
      expect(db.pragma('user_version', { simple: true })).toBe(1);
      expect(tables(db)).toEqual(['attempt_batches']);
    });
  });

  it('gives a new database the whole schema, marked as keyscope’s', () => {
    new KeyscopeStore({ path }).close();
    onDatabase((db) => {
      expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length);
      expect(db.pragma('application_id', { simple: true })).toBe(KEYSCOPE_APPLICATION_ID);
    });
  });
});

describe('the key index in generations', () => {
  it('takes a key index written before generations as generation 0, every key still found and refused again', () => {
    const attempts = [0, 1, 2, 3].map((i) => server({ key: `k${i}`, node: 'a', store: 'A', at: i }));
    const store = new KeyscopeStore({ path, attemptIndexBatchRows: 1 });
    store.transaction(() => {
      for (const attempt of attempts) store.attemptLog.append(attempt.key, attempt);
    });
    store.close();
    // The database as the first schema left it: one index keyed by partition key and batch.
    onDatabase((db) =>
      db.exec(`
        CREATE TABLE attempt_batch_keys (
          partition_key TEXT NOT NULL, batch_id INTEGER NOT NULL, start INTEGER NOT NULL, length INTEGER NOT NULL,
          PRIMARY KEY (partition_key, batch_id)
        ) WITHOUT ROWID;
        INSERT INTO attempt_batch_keys SELECT partition_key, batch_id, start, length FROM attempt_key_generations;
        DROP TABLE attempt_key_generations;
        ALTER TABLE findings DROP COLUMN excerpt;
        DROP TABLE scope_tiers;
        DROP TABLE routing_events;
        DROP INDEX incidents_by_routing_event;
        PRAGMA user_version = 1;
      `),
    );
    const reopened = new KeyscopeStore({ path, attemptIndexBatchRows: 1 });
    try {
      const table = reopened.attemptLog as AttemptTable;
      expect(table.generations).toEqual([{ id: 0, entries: 4 }]);
      for (const attempt of attempts) expect(reopened.attemptLog.attemptsOf(attempt.key)).toEqual([attempt]);
      const later = server({ key: 'k4', node: 'a', store: 'A', at: 10 });
      reopened.transaction(() => {
        for (const attempt of attempts)
          expect(reopened.attemptLog.append(attempt.key, { ...attempt })).toBe(false);
        expect(reopened.attemptLog.append(later.key, later)).toBe(true);
      });
      // Generation 0 takes entries until it holds its share, as any newest generation does.
      expect(table.generations).toEqual([{ id: 0, entries: 5 }]);
    } finally {
      reopened.close();
    }
    onDatabase((db) => expect(tables(db)).not.toContain('attempt_batch_keys'));
  });
});

describe('store and node lists', () => {
  it('cuts the lists of findings and incidents written before the caps to their first names, counts them all, and keeps each finding’s excerpt', () => {
    const store = new KeyscopeStore({ path });
    const detector = createDetector();
    const attempts = Array.from({ length: 1_200 }, (_, i) =>
      server({
        key: `k${i % 2}`,
        node: `n${String(i).padStart(4, '0')}`,
        store: `s${String(i).padStart(4, '0')}`,
        at: i / 100,
      }),
    );
    store.transaction(() =>
      store.applyChanges(
        detector.ingest({ attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } }),
      ),
    );
    const [incident] = detector.incidents();
    store.transaction(() => store.incidentParts.put(incident!.id, 0, incident!));
    store.close();
    // The rows as keyscope wrote them before the caps: every name listed, no totals.
    onDatabase((db) => {
      const idColumns = { findings: 'id', incidents: 'id', kafka_incident_parts: 'incident_id' };
      for (const [table, idColumn] of Object.entries(idColumns)) {
        const rows = db.prepare(`SELECT ${idColumn} AS id, body FROM ${table}`).all() as {
          id: string;
          body: string;
        }[];
        for (const row of rows) {
          const body = JSON.parse(row.body);
          const whole = attempts.filter((a) => table !== 'findings' || a.key === body.key);
          body.stores = whole.map((a) => (a.kind === 'server' ? a.store : '')).sort();
          body.nodes = whole.map((a) => a.placement.node).sort();
          delete body.storesTotal;
          delete body.nodesTotal;
          db.prepare(`UPDATE ${table} SET body = ? WHERE ${idColumn} = ?`).run(JSON.stringify(body), row.id);
        }
      }
      db.exec('ALTER TABLE findings DROP COLUMN excerpt');
      db.exec('DROP TABLE scope_tiers; DROP TABLE routing_events; DROP INDEX incidents_by_routing_event;');
      db.pragma(`user_version = ${MIGRATIONS.length - 3}`);
    });
    const reopened = new KeyscopeStore({ path });
    try {
      const findings = reopened.findings.ofIncident(incident!.id);
      expect(findings).toHaveLength(2);
      for (const finding of findings) {
        expect(finding).toMatchObject({ storesTotal: 600, nodesTotal: 600 });
        expect(finding.stores).toHaveLength(100);
        expect(finding.nodes).toHaveLength(100);
        // Its excerpt, what an incident's detail reads: the first 100 of its 600 attempts.
        const excerpt = reopened.findings.excerpt(finding.id)!;
        expect(excerpt.attemptsTotal).toBe(600);
        expect(excerpt.finding.attempts).toEqual(finding.attempts.slice(0, 100));
        expect(excerpt.finding).toMatchObject({ id: finding.id, storesTotal: 600 });
        expect(excerpt.finding.stores).toEqual(finding.stores);
      }
      for (const stored of [
        reopened.incidents.get(incident!.id)!,
        reopened.incidentParts.of(incident!.id)[0]!,
      ]) {
        expect(stored).toMatchObject({ storesTotal: 1_200, nodesTotal: 1_200, keys: 2 });
        expect(stored.stores).toEqual(
          attempts.slice(0, 1_000).map((a) => (a.kind === 'server' ? a.store : '')),
        );
        expect(stored.nodes).toHaveLength(1_000);
      }
    } finally {
      reopened.close();
    }
  });
});

describe('the scope report tier by tier', () => {
  it('moves a scope report saved as one state row into a row per tier, each loaded as it was', () => {
    const detector = createDetector();
    detector.ingest({
      attempts: [
        server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
        server({ key: 'k1', node: 'b', store: 'B', at: 1 }),
        server({ key: 'k2', node: 'a', store: 'A', at: 2, operation: 'POST /refunds' }),
      ],
      activity: [],
      invalid: { outcome: 0, hit: 0, scope: 0 },
    });
    const before = detector.scopeState();
    expect(before).toHaveLength(2);
    new KeyscopeStore({ path }).close();
    // The database as the schema before scope_tiers left it: the report in one state row.
    onDatabase((db) => {
      db.exec('DROP TABLE scope_tiers; DROP TABLE routing_events; DROP INDEX incidents_by_routing_event;');
      db.prepare("INSERT INTO state (name, body) VALUES ('scope-report', ?)").run(JSON.stringify(before));
      db.pragma(`user_version = ${MIGRATIONS.length - 2}`);
    });
    const reopened = new KeyscopeStore({ path });
    try {
      expect(reopened.scopeTiers.load()).toEqual(before);
      expect(reopened.state.load('scope-report')).toBeUndefined();
      const restored = createDetector();
      restored.restore({ findings: [], scopeState: reopened.scopeTiers.load() });
      expect(restored.scopeReport()).toEqual(detector.scopeReport());
    } finally {
      reopened.close();
    }
  });
});

describe('the routing events table', () => {
  it('gives a database written before it the table, and lists the incidents stored before under their events', () => {
    const traffic = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'a', fromSecond: 70, toSecond: 120 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 120 }),
      ...activity({ node: 'c', fromSecond: 0, toSecond: 120 }),
    ];
    const store = new KeyscopeStore({ path });
    const detector = createDetector(undefined, { attemptLog: store.attemptLog });
    const attempts = [
      server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 61 }),
    ];
    store.transaction(() => {
      store.applyChanges(
        detector.ingest({ attempts, activity: traffic, invalid: { outcome: 0, hit: 0, scope: 0 } }),
      );
      store.applyChanges(detector.tick(TEST_EPOCH_UNIX_MILLIS + 200_000));
    });
    const [incident] = store.incidents.list({}, { limit: 1 }).items;
    const event = incident!.routingEvent!;
    store.close();
    // The database as the schema before routing events left it: incidents, no routing events.
    onDatabase((db) =>
      db.exec(
        `DROP TABLE routing_events; DROP INDEX incidents_by_routing_event; PRAGMA user_version = ${MIGRATIONS.length - 1};`,
      ),
    );
    const reopened = new KeyscopeStore({ path });
    try {
      expect(reopened.routingEvents.list({}, { limit: 10 }).items).toEqual([]);
      reopened.transaction(() =>
        reopened.applyChanges({
          findings: [],
          retractedFindingIds: [],
          incidents: [],
          retractedIncidentIds: [],
          routingEvents: [event],
        }),
      );
      expect(reopened.routingEvents.list({}, { limit: 10 }).items).toEqual([
        { ...event, incidentIds: [incident!.id] },
      ]);
    } finally {
      reopened.close();
    }
    onDatabase((db) => expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.length));
  });
});

describe('the schema', () => {
  /** Every SQL text the store prepared while `work` ran, on any connection. */
  function preparedDuring(work: () => void): string[] {
    const prepared: string[] = [];
    const prototype = BetterSqlite3.prototype as { prepare: (sql: string) => unknown };
    const prepare = prototype.prepare;
    prototype.prepare = function (this: unknown, sql: string) {
      prepared.push(sql);
      return prepare.call(this, sql);
    };
    try {
      work();
    } finally {
      prototype.prepare = prepare;
    }
    return prepared;
  }

  /** Two executions of `key` in two node stores, at `second`: a finding and an incident. */
  const duplicate = (key: string, second: number, tenant = ''): Attempt[] => [
    server({ key, tenant, node: 'a', store: 'A', at: second }),
    server({ key, tenant, node: 'b', store: 'B', at: second + 1 }),
  ];

  const nodeDown = (id: string): RoutingEvent => ({
    id,
    type: 'node_down',
    service: 'payments',
    node: 'a',
    cluster: '',
    region: '',
    startUnixMillis: TEST_EPOCH_UNIX_MILLIS,
    endUnixMillis: TEST_EPOCH_UNIX_MILLIS + 10_000,
    ended: true,
    description: 'node a of payments emitted no server spans for 10 s',
  });

  /** Rows in each table of the schema (sqlite_sequence aside). */
  const rowsPerTable = (db: BetterSqlite3.Database) =>
    Object.fromEntries(
      (
        db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sqlite_sequence'")
          .pluck()
          .all() as string[]
      ).map((name) => [name, db.prepare(`SELECT count(*) FROM "${name}"`).pluck().get() as number]),
    );

  it('holds exactly the tables, columns and indexes the store uses: every table fills, every column and index is in its SQL', () => {
    let rows: Record<string, number> = {};
    const prepared = preparedDuring(() => {
      const store = new KeyscopeStore({ path, attemptIndexBatchRows: 2 });
      try {
        const detector = createDetector(undefined, { attemptLog: store.attemptLog });
        const ingest = (attempts: Attempt[]) =>
          store.transaction(() =>
            store.applyChanges(
              detector.ingest({ attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } }),
            ),
          );
        ingest(duplicate('k1', 0));
        ingest(duplicate('k2', 5_000, 'acme'));
        ingest([server({ key: 'k3', node: 'a', store: 'A', at: 10_000 })]);
        expect(store.attemptsOfKey('k2', 'acme')).toHaveLength(2);
        // 64 transactions of node activity fold into a chunk; one more waits in the log.
        for (let i = 0; i <= 64; i++) {
          store.transaction(() =>
            store.recordActivity(activity({ node: 'a', fromSecond: i, toSecond: i + 1, spans: 1 })),
          );
        }
        expect(store.recentActivity(60_000).length).toBeGreaterThan(0);

        const findings = store.findings;
        const [latest, earlier] = store.incidents.list({}, { limit: 10 }).items;
        expect(earlier).toBeDefined();
        store.incidents.acknowledge(latest!.id, 'alice', 1_000);
        store.incidents.resolve(earlier!.id, 'bob', 2_000);
        store.incidents.get(latest!.id, 'acme');
        store.incidents.list({ status: 'open', service: 'payments', tenant: 'acme' }, { limit: 1 });
        findings.list({ key: 'k1', class: 'cross_store_duplicate', service: 'payments' }, { limit: 1 });
        findings.list({ tenant: 'acme', sinceUnixMillis: 0, untilUnixMillis: Date.now() }, { limit: 1 });
        findings.ofIncident(latest!.id);
        findings.ofKey('k1');
        findings.recent(0);
        findings.latestUnixMillis();

        // A node_down of the incident's node, cited by it, and one no incident cites.
        const cited = { ...nodeDown('re_cited'), id: latest!.id.replace('inc', 're') };
        store.transaction(() =>
          store.applyChanges({
            findings: [],
            retractedFindingIds: [],
            incidents: [{ ...latest!, routingEvent: cited }],
            retractedIncidentIds: [],
            routingEvents: [cited, nodeDown('re_uncited'), nodeDown('re_disproved')],
            retractedRoutingEventIds: [],
          }),
        );
        store.transaction(() =>
          store.applyChanges({
            findings: [],
            retractedFindingIds: [],
            incidents: [],
            retractedIncidentIds: [],
            retractedRoutingEventIds: ['re_disproved'],
          }),
        );
        expect(store.routingEvents.list({}, { limit: 10 }).items.map((e) => e.incidentIds)).toEqual([
          [],
          [latest!.id],
        ]);
        store.routingEvents.list(
          {
            type: 'node_down',
            service: 'payments',
            sinceUnixMillis: 0,
            untilUnixMillis: Date.now(),
            tenant: 'acme',
          },
          { limit: 1 },
        );

        const outbox = store.outbox;
        for (const dedupKey of ['trigger', 'resolve', 'acknowledge']) {
          outbox.enqueue({ sink: 'pager', dedupKey, incidentId: earlier!.id, payload: {}, dueUnixMillis: 0 });
        }
        const [one, two] = outbox.due(10, 10);
        outbox.markFailed(one!.id, 'connection refused', 5);
        outbox.markDelivered(one!.id, 6);
        outbox.markAbandoned(two!.id, 'gone', 7);
        outbox.keysStartingWith('pager', 'tr');
        outbox.deliveriesOf(earlier!.id);
        outbox.pending();

        store.state.save('kafka-offsets', { partitions: 1 });
        store.transaction(() => store.scopeTiers.save(detector.scopeChanges()));
        expect(store.scopeTiers.load().length).toBeGreaterThan(0);
        expect(store.probeWrite()).toBe(true); // writes a state row and deletes it
        store.state.load('kafka-offsets');
        store.transaction(() => {
          store.incidentParts.put(latest!.id, 0, latest!);
          store.incidentParts.put(latest!.id, 1, latest!);
          store.incidentParts.delete(latest!.id, 1);
        });
        store.incidentParts.of(latest!.id);
        store.counts();

        rows = rowsPerTable(connectionOf(store));
        // Everything but the newest batch and chunk goes; each table's purge runs.
        store.purge({
          attemptsBeforeUnixMillis: TEST_EPOCH_UNIX_MILLIS + 86_400_000,
          recordsBeforeUnixMillis: Number.MAX_SAFE_INTEGER,
          maxRows: 100,
        });
        store.purgeToSize({ maxBytes: 1, maxRows: 100 });
      } finally {
        store.close();
      }
    });
    // Every table holds rows the store wrote (attempt_index its one row of progress).
    expect(Object.entries(rows).filter(([, count]) => count === 0)).toEqual([]);
    expect(Object.keys(rows).sort()).toEqual([
      'activity_chunks',
      'activity_log',
      'attempt_batches',
      'attempt_index',
      'attempt_key_generations',
      'findings',
      'incidents',
      'kafka_incident_parts',
      'outbox',
      'placements',
      'routing_events',
      'scope_tiers',
      'state',
    ]);
    onDatabase((db) => {
      const statements = prepared.filter((sql) => !/^\s*PRAGMA/i.test(sql));
      const mentions = (sql: string, word: string) => new RegExp(`\\b${word}\\b`).test(sql);
      for (const table of Object.keys(rows)) {
        const ofTable = statements.filter((sql) => mentions(sql, table));
        const columns = db.pragma(`table_info(${table})`) as { name: string }[];
        const unused = columns.map((c) => c.name).filter((c) => !ofTable.some((sql) => mentions(sql, c)));
        expect({ table, unused }).toEqual({ table, unused: [] });
      }
      // Each index of its own (not a key's or a UNIQUE constraint's) serves a statement's plan.
      const indexes = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        .pluck()
        .all() as string[];
      const plans = statements.map((sql) => planOf(db, sql)).join('\n');
      const unplanned = indexes.filter((index) => !mentions(plans, index));
      expect(unplanned).toEqual([]);
    });
  });
});

/** What EXPLAIN QUERY PLAN says of `sql`, its parameters bound to NULL (plans do not depend on them). */
function planOf(db: BetterSqlite3.Database, sql: string): string {
  const explain = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  const named = [...sql.matchAll(/[@$:]([A-Za-z_]\w*)/g)].map((match) => match[1]!);
  const parameters =
    named.length > 0
      ? [Object.fromEntries(named.map((name) => [name, null]))]
      : Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => null);
  const rows = explain.all(...parameters) as { detail: string }[];
  return rows.map((row) => row.detail).join('\n');
}
