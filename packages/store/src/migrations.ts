import { KeyscopeError } from '@keyscope/errors';
import type { Database } from 'better-sqlite3';
import { STORE_NEWER_SCHEMA, STORE_PRE_RELEASE_SCHEMA } from './errors.ts';

/**
 * `PRAGMA application_id` of every database this store created: 'KSCP'. Builds before the first
 * release did not set it, so a database with a schema version and without this id was written by
 * one of them (or by another program), whatever its version says.
 */
export const KEYSCOPE_APPLICATION_ID = 0x4b534350;

/** What a schema change is: SQL run in one transaction with the bump of `user_version`. */
export type Migration = string;

/**
 * Schema changes, applied in order at open; `PRAGMA user_version` records how many have run.
 * Append only: a released migration is never edited, because databases already ran it. Each
 * table's comment says what it holds; the file named there owns its SQL.
 */
export const MIGRATIONS: readonly Migration[] = [
  `
  -- The attempt log (attempt-table.ts): one row per transaction, its attempts by partition key
  -- (the idempotency key, or key + NUL + tenant for tenant-scoped keys). body holds, per partition
  -- key, one encoded array of its attempts (attempt-codec.ts), the arrays concatenated; keys lists
  -- [partition_key, start, length] of each array's bytes in body (start 1-based, as substr counts);
  -- end_ms is the latest end among the row's attempts, so a row is purged once all of it is past
  -- the horizon.
  CREATE TABLE attempt_batches (
    id INTEGER PRIMARY KEY,
    end_ms REAL NOT NULL,
    attempts INTEGER NOT NULL,
    keys TEXT NOT NULL,
    body BLOB NOT NULL
  );
  CREATE INDEX attempt_batches_by_end ON attempt_batches (end_ms);
  -- The key index, written in sorted batches behind the ingest path: a copy of each row's keys, so
  -- a lookup reads one key's bytes of a row. attempt_index records how far it has got; rows past
  -- it are indexed when the store opens. (Replaced by attempt_key_generations, below.)
  CREATE TABLE attempt_batch_keys (
    partition_key TEXT NOT NULL,
    batch_id INTEGER NOT NULL,
    start INTEGER NOT NULL,
    length INTEGER NOT NULL,
    PRIMARY KEY (partition_key, batch_id)
  ) WITHOUT ROWID;
  CREATE TABLE attempt_index (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through INTEGER NOT NULL
  );
  INSERT INTO attempt_index (id, indexed_through) VALUES (1, 0);

  -- The nodes attempts and activity ran on, referred to by id from attempt batches and activity
  -- samples (placement-table.ts). last_ms is when the placement was last written into a row, as
  -- the time that row is purged by, so that placements of nodes long gone are purged too.
  CREATE TABLE placements (
    id INTEGER PRIMARY KEY,
    service TEXT NOT NULL,
    node TEXT NOT NULL,
    cluster TEXT NOT NULL,
    region TEXT NOT NULL,
    zone TEXT NOT NULL,
    last_ms REAL NOT NULL,
    UNIQUE (service, node, cluster, region, zone)
  );
  CREATE INDEX placements_by_last_use ON placements (last_ms);

  -- Server spans per node and second, what routing events (a node going silent, a failover) are
  -- inferred from (activity-table.ts): each transaction's counts as one log row, folded every few
  -- dozen transactions into one chunk with the first and last bucket it covers.
  CREATE TABLE activity_log (
    id INTEGER PRIMARY KEY,
    body TEXT NOT NULL
  );
  CREATE TABLE activity_chunks (
    id INTEGER PRIMARY KEY,
    first_bucket_ms INTEGER NOT NULL,
    last_bucket_ms INTEGER NOT NULL,
    body TEXT NOT NULL
  );
  CREATE INDEX activity_chunks_by_last_bucket ON activity_chunks (last_bucket_ms);

  -- seq orders lists and makes cursors stable: it is assigned on first insert and never changes,
  -- so concurrent inserts land above every cursor already handed out.
  CREATE TABLE findings (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    key TEXT NOT NULL,
    class TEXT NOT NULL,
    service TEXT NOT NULL,
    tenants TEXT NOT NULL,
    incident_id TEXT NOT NULL,
    first_seen_ms REAL NOT NULL,
    last_seen_ms REAL NOT NULL,
    body TEXT NOT NULL
  );
  CREATE INDEX findings_by_key ON findings (key);
  CREATE INDEX findings_by_incident ON findings (incident_id);
  CREATE INDEX findings_by_last_seen ON findings (last_seen_ms);

  CREATE TABLE incidents (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    service TEXT NOT NULL,
    class TEXT NOT NULL,
    status TEXT NOT NULL,
    keys INTEGER NOT NULL,
    opened_ms REAL NOT NULL,
    last_finding_ms REAL NOT NULL,
    acknowledged_ms REAL,
    acknowledged_by TEXT,
    resolved_manually_ms REAL,
    resolved_by TEXT,
    body TEXT NOT NULL
  );
  CREATE INDEX incidents_by_last_finding ON incidents (last_finding_ms);

  -- The Kafka serve role's incident parts (incident-part-table.ts): each detect partition's view
  -- of an incident, merged into the incident served.
  CREATE TABLE kafka_incident_parts (
    incident_id TEXT NOT NULL,
    partition INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (incident_id, partition)
  ) WITHOUT ROWID;

  -- Alert deliveries: one row per (sink, dedup key), so a page is enqueued once however often the
  -- incident is upserted, and survives restarts until delivered.
  CREATE TABLE outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sink TEXT NOT NULL,
    dedup_key TEXT NOT NULL,
    incident_id TEXT NOT NULL,
    payload TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms REAL NOT NULL,
    delivered_ms REAL,
    last_error TEXT,
    UNIQUE (sink, dedup_key)
  );
  CREATE INDEX outbox_due ON outbox (delivered_ms, next_attempt_ms);

  -- Small named documents: the scope report aggregates, routing events.
  CREATE TABLE state (
    name TEXT PRIMARY KEY,
    body TEXT NOT NULL
  );
  `,
  `
  -- The key index in generations (attempt-table.ts): each indexing inserts its sorted entries into
  -- the newest generation, a small contiguous part of the B-tree, until it holds its share of
  -- entries and the next indexing starts another; one key's entries are read generation by
  -- generation. Keyed by partition key alone, every indexing wrote a page of the whole index per key
  -- once the index outgrew a batch. The entries indexed before are generation 0.
  CREATE TABLE attempt_key_generations (
    generation INTEGER NOT NULL,
    partition_key TEXT NOT NULL,
    batch_id INTEGER NOT NULL,
    start INTEGER NOT NULL,
    length INTEGER NOT NULL,
    PRIMARY KEY (generation, partition_key, batch_id)
  ) WITHOUT ROWID;
  INSERT INTO attempt_key_generations (generation, partition_key, batch_id, start, length)
    SELECT 0, partition_key, batch_id, start, length FROM attempt_batch_keys ORDER BY partition_key, batch_id;
  DROP TABLE attempt_batch_keys;
  `,
  `
  -- Findings and incidents list at most the detector's default caps of stores and nodes
  -- (maxStoresPerFinding 100, maxStoresPerIncident 1000) and count them all in storesTotal and
  -- nodesTotal. Rows written before keep their first names up to the caps, and their totals; the
  -- detector lists a finding's or incident's names again by the configured caps when it rewrites
  -- them (judging counts every store from the findings' attempts, never from these lists).
  UPDATE findings SET body = json_set(body,
    '$.storesTotal', json_array_length(body, '$.stores'),
    '$.nodesTotal', json_array_length(body, '$.nodes'),
    '$.stores', json((SELECT json_group_array(value) FROM
      (SELECT value FROM json_each(findings.body, '$.stores') ORDER BY key LIMIT 100))),
    '$.nodes', json((SELECT json_group_array(value) FROM
      (SELECT value FROM json_each(findings.body, '$.nodes') ORDER BY key LIMIT 100))))
  WHERE json_type(body, '$.storesTotal') IS NULL;
  UPDATE incidents SET body = json_set(body,
    '$.storesTotal', json_array_length(body, '$.stores'),
    '$.nodesTotal', json_array_length(body, '$.nodes'),
    '$.stores', json((SELECT json_group_array(value) FROM
      (SELECT value FROM json_each(incidents.body, '$.stores') ORDER BY key LIMIT 1000))),
    '$.nodes', json((SELECT json_group_array(value) FROM
      (SELECT value FROM json_each(incidents.body, '$.nodes') ORDER BY key LIMIT 1000))))
  WHERE json_type(body, '$.storesTotal') IS NULL;
  UPDATE kafka_incident_parts SET body = json_set(body,
    '$.storesTotal', json_array_length(body, '$.stores'),
    '$.nodesTotal', json_array_length(body, '$.nodes'),
    '$.stores', json((SELECT json_group_array(value) FROM
      (SELECT value FROM json_each(kafka_incident_parts.body, '$.stores') ORDER BY key LIMIT 1000))),
    '$.nodes', json((SELECT json_group_array(value) FROM
      (SELECT value FROM json_each(kafka_incident_parts.body, '$.nodes') ORDER BY key LIMIT 1000))))
  WHERE json_type(body, '$.storesTotal') IS NULL;

  -- Each finding with its first 100 attempts (EXCERPT_ATTEMPTS, finding-table.ts) and their count,
  -- what an incident's detail reads: a hot key's whole body is megabytes.
  ALTER TABLE findings ADD COLUMN excerpt TEXT NOT NULL DEFAULT '';
  UPDATE findings SET excerpt = json_set(body,
    '$.attempts', json((SELECT json_group_array(json(value)) FROM
      (SELECT value FROM json_each(findings.body, '$.attempts') ORDER BY key LIMIT 100))),
    '$.attemptsTotal', json_array_length(body, '$.attempts'));
  `,
  `
  -- The scope report, one row per tier (scope-tier-table.ts): body is the tier's aggregates as
  -- JSON (ScopeTierState), the overflow bucket's under the tier name ''. Each commit upserts the
  -- tiers it changed. The report was one JSON array in the state row 'scope-report', rewritten
  -- whole by every commit; its rows move here.
  CREATE TABLE scope_tiers (
    tier TEXT PRIMARY KEY,
    body TEXT NOT NULL
  ) WITHOUT ROWID;
  INSERT INTO scope_tiers (tier, body)
    SELECT json_extract(row.value, '$.tier'), row.value
    FROM state, json_each(state.body) AS row
    WHERE state.name = 'scope-report' AND json_type(state.body) = 'array'
      AND json_extract(row.value, '$.tier') IS NOT NULL
    ON CONFLICT (tier) DO UPDATE SET body = excluded.body;
  DELETE FROM state WHERE name = 'scope-report';
  `,
  `
  -- Routing events the detector inferred (routing-event-table.ts), kept for the records' retention
  -- after their window ends; seq orders lists as in findings. An incident cites the event it is
  -- grouped under in its body, indexed by that event's id.
  CREATE TABLE routing_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    service TEXT NOT NULL,
    start_ms REAL NOT NULL,
    end_ms REAL NOT NULL,
    body TEXT NOT NULL
  );
  CREATE INDEX routing_events_by_end ON routing_events (end_ms);
  CREATE INDEX incidents_by_routing_event ON incidents (json_extract(body, '$.routingEvent.id'));
  `,
];

/**
 * Brings the database at `path` to the latest of `migrations`, each one it lacks in a transaction
 * of its own (a failed one leaves the database at the version before it), and returns that
 * version. Refuses, before running any, a database written by a pre-release build
 * (KS_STORE_PRE_RELEASE_SCHEMA) or by a newer keyscope (KS_STORE_NEWER_SCHEMA).
 */
export function migrate(db: Database, path: string, migrations: readonly Migration[] = MIGRATIONS): number {
  const applied = db.pragma('user_version', { simple: true }) as number;
  const applicationId = db.pragma('application_id', { simple: true }) as number;
  if (applied > 0 && applicationId !== KEYSCOPE_APPLICATION_ID) {
    throw new KeyscopeError(
      STORE_PRE_RELEASE_SCHEMA,
      `database ${path} has schema version ${applied} and application id ${applicationId}, expected ${KEYSCOPE_APPLICATION_ID}: ` +
        'it was written by a pre-release build of keyscope (or by another program), which this build does not read; ' +
        'move it aside to start with an empty database',
    );
  }
  if (applied > migrations.length) {
    throw new KeyscopeError(
      STORE_NEWER_SCHEMA,
      `database ${path} has schema version ${applied}, this keyscope knows up to ${migrations.length}`,
    );
  }
  for (let version = applied; version < migrations.length; version++) {
    db.transaction(() => {
      db.exec(migrations[version]!);
      if (version === 0) db.pragma(`application_id = ${KEYSCOPE_APPLICATION_ID}`);
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
  return migrations.length;
}
