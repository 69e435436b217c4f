import type { Database } from 'better-sqlite3';

/**
 * Schema changes, applied in order at open; `PRAGMA user_version` records how many have run.
 * Append only: a shipped migration is never edited, because databases in the field already ran it.
 */
const MIGRATIONS: readonly string[] = [
  `
  -- Every attempt of every key within the retry horizon: the detector's evidence and the key lookup.
  -- The primary key makes a redelivered span a no-op (INSERT OR IGNORE) and keeps a key's
  -- attempts together for the detector's lookup by partition key.
  CREATE TABLE attempts (
    partition_key TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    key TEXT NOT NULL,
    end_ms REAL NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (partition_key, trace_id, span_id)
  ) WITHOUT ROWID;
  CREATE INDEX attempts_by_end ON attempts (end_ms);

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
  -- Server spans per node and second: what routing events (a node going silent, a failover) are
  -- inferred from. Kept for a couple of hours so a restart does not forget an ongoing failover.
  CREATE TABLE activity (
    service TEXT NOT NULL,
    node TEXT NOT NULL,
    bucket_start_ms INTEGER NOT NULL,
    bucket_ms INTEGER NOT NULL,
    placement TEXT NOT NULL,
    spans INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    PRIMARY KEY (service, node, bucket_start_ms)
  ) WITHOUT ROWID;
  CREATE INDEX activity_by_bucket ON activity (bucket_start_ms);
  `,
  `
  -- Attempts as an append-only rowid table with a unique index for redelivery, instead of one
  -- B-tree keyed by (partition key, trace, span) that held the rows themselves: keys arrive in
  -- random order, and with fat rows in the key's B-tree every insert dirtied its own 4 KiB page
  -- of row data. Now rows append and only small index entries land at random (2-3x the insert
  -- rate measured on this project's machines). The partition key is the idempotency key, or
  -- key + NUL + tenant for tenant-scoped keys, so a key's attempts are one index range.
  CREATE TABLE attempts_v2 (
    id INTEGER PRIMARY KEY,
    partition_key TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    key TEXT NOT NULL,
    end_ms REAL NOT NULL,
    body TEXT NOT NULL
  );
  INSERT INTO attempts_v2 (partition_key, trace_id, span_id, key, end_ms, body)
    SELECT partition_key, trace_id, span_id, key, end_ms, body FROM attempts;
  DROP TABLE attempts;
  ALTER TABLE attempts_v2 RENAME TO attempts;
  CREATE UNIQUE INDEX attempts_by_span ON attempts (partition_key, trace_id, span_id);
  CREATE INDEX attempts_by_end ON attempts (end_ms);
  `,
  `
  -- The key index moves out of the insert path (attempt-table.ts): attempts append without it,
  -- and their entries are added to attempt_keys in sorted batches. attempt_index records how far
  -- the batches have got; rows past it are indexed when the store opens.
  CREATE TABLE attempt_keys (
    partition_key TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    attempt_id INTEGER NOT NULL,
    PRIMARY KEY (partition_key, trace_id, span_id)
  ) WITHOUT ROWID;
  INSERT INTO attempt_keys (partition_key, trace_id, span_id, attempt_id)
    SELECT partition_key, trace_id, span_id, id FROM attempts ORDER BY partition_key, trace_id, span_id;
  DROP INDEX attempts_by_span;
  CREATE TABLE attempt_index (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through INTEGER NOT NULL
  );
  INSERT INTO attempt_index (id, indexed_through) VALUES (1, (SELECT coalesce(max(id), 0) FROM attempts));
  `,
  `
  -- One row per partition key and transaction instead of one per attempt (attempt-table.ts): a
  -- key's attempts mostly arrive together (a client attempt and the server spans it caused, in one
  -- payload), and a row costs SQLite and better-sqlite3 the same few microseconds whatever it holds
  -- (measured: ~9 µs of the embedded service's time per attempt went to its row and index entry).
  -- body is a JSON array of the attempts, each [traceId, spanId, ...the row's former body]; end_ms
  -- is the latest end among them, so a group is purged once all of it is past the horizon. The key
  -- index holds one entry per group; attempt_index.indexed_through now counts groups.
  CREATE TABLE attempt_groups (
    id INTEGER PRIMARY KEY,
    partition_key TEXT NOT NULL,
    key TEXT NOT NULL,
    end_ms REAL NOT NULL,
    body TEXT NOT NULL
  );
  INSERT INTO attempt_groups (partition_key, key, end_ms, body)
    SELECT partition_key, key, end_ms,
      '[[' || json_quote(trace_id) || ',' || json_quote(span_id) || ',' ||
      CASE WHEN substr(body, 1, 1) = '[' THEN substr(body, 2) || ']' ELSE body || ']]' END
    FROM attempts ORDER BY id;
  CREATE INDEX attempt_groups_by_end ON attempt_groups (end_ms);
  CREATE TABLE attempt_group_keys (
    partition_key TEXT NOT NULL,
    group_id INTEGER NOT NULL,
    PRIMARY KEY (partition_key, group_id)
  ) WITHOUT ROWID;
  INSERT INTO attempt_group_keys (partition_key, group_id)
    SELECT partition_key, id FROM attempt_groups ORDER BY partition_key, id;
  DROP TABLE attempt_keys;
  DROP TABLE attempts;
  UPDATE attempt_index SET indexed_through = (SELECT coalesce(max(id), 0) FROM attempt_groups);
  `,
  `
  -- Node activity keyed by time first. Every commit adds the latest second's counts of every node
  -- that served spans; keyed by (service, node, bucket) each node's row sat on a page of its own,
  -- and a commit wrote all those pages to the WAL (measured: 64 of the 125 4-KiB frames an average
  -- commit wrote in the bench's workload). By (bucket, service, node) a second's rows share a few
  -- pages, and the key serves the reads and purges by bucket that needed an index of their own.
  CREATE TABLE activity_v2 (
    bucket_start_ms INTEGER NOT NULL,
    service TEXT NOT NULL,
    node TEXT NOT NULL,
    bucket_ms INTEGER NOT NULL,
    placement TEXT NOT NULL,
    spans INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    PRIMARY KEY (bucket_start_ms, service, node)
  ) WITHOUT ROWID;
  INSERT INTO activity_v2 (bucket_start_ms, service, node, bucket_ms, placement, spans, errors)
    SELECT bucket_start_ms, service, node, bucket_ms, placement, spans, errors FROM activity;
  DROP TABLE activity;
  ALTER TABLE activity_v2 RENAME TO activity;
  `,
  `
  -- Node activity as each transaction counted it, one row per transaction (a JSON array of
  -- [bucket_start_ms, bucket_ms, service, node, cluster, region, zone, spans, errors]), folded into
  -- activity every few dozen transactions (activity-table.ts): an upsert per node and second in
  -- every transaction was a tenth of the persisted ingest path's time.
  CREATE TABLE activity_log (
    id INTEGER PRIMARY KEY,
    body TEXT NOT NULL
  );
  `,
  `
  -- Attempts as one row per transaction instead of one per partition key and transaction
  -- (attempt-table.ts): an INSERT costs a few microseconds whatever the row holds, and a
  -- transaction on the ingest path wrote about sixty groups. body holds, per partition key, a JSON
  -- array [key, ...entries] (an entry as attempt_groups held it), the arrays concatenated; keys
  -- lists [partition_key, start, length] of each array's bytes in body (start 1-based, as substr
  -- counts), which the key index copies, so a lookup reads one key's bytes, not the batch's.
  CREATE TABLE attempt_batches (
    id INTEGER PRIMARY KEY,
    end_ms REAL NOT NULL,
    attempts INTEGER NOT NULL,
    keys TEXT NOT NULL,
    body BLOB NOT NULL
  );
  INSERT INTO attempt_batches (id, end_ms, attempts, keys, body)
    SELECT id, end_ms, attempts, json_array(json_array(partition_key, 1, length(segment))), segment
    FROM (
      SELECT id, partition_key, end_ms, json_array_length(body) AS attempts,
        CAST('[' || json_quote(key) || ',' || substr(body, 2) AS BLOB) AS segment
      FROM attempt_groups
    )
    ORDER BY id;
  CREATE INDEX attempt_batches_by_end ON attempt_batches (end_ms);
  CREATE TABLE attempt_batch_keys (
    partition_key TEXT NOT NULL,
    batch_id INTEGER NOT NULL,
    start INTEGER NOT NULL,
    length INTEGER NOT NULL,
    PRIMARY KEY (partition_key, batch_id)
  ) WITHOUT ROWID;
  INSERT INTO attempt_batch_keys (partition_key, batch_id, start, length)
    SELECT k.partition_key, k.group_id, 1, length(b.body)
    FROM attempt_group_keys k JOIN attempt_batches b ON b.id = k.group_id
    ORDER BY k.partition_key, k.group_id;
  DROP TABLE attempt_group_keys;
  DROP TABLE attempt_groups;
  `,
  `
  -- The nodes attempts and activity ran on, referred to by id from attempt_batches entries and
  -- activity_log samples written from now on (placement-table.ts); rows written before keep their
  -- five strings.
  CREATE TABLE placements (
    id INTEGER PRIMARY KEY,
    service TEXT NOT NULL,
    node TEXT NOT NULL,
    cluster TEXT NOT NULL,
    region TEXT NOT NULL,
    zone TEXT NOT NULL,
    UNIQUE (service, node, cluster, region, zone)
  );
  `,
  `
  -- Node activity folded into one row per fold (activity-table.ts): the merged counts of the
  -- transactions logged since the last, as activity_log samples, with the first and last bucket
  -- they cover. Folding upserted one activity row per node and second, ~3,200 per 200,000 spans in
  -- the bench's workload. activity keeps what was written before, read and purged as it was.
  CREATE TABLE activity_chunks (
    id INTEGER PRIMARY KEY,
    first_bucket_ms INTEGER NOT NULL,
    last_bucket_ms INTEGER NOT NULL,
    body TEXT NOT NULL
  );
  CREATE INDEX activity_chunks_by_last_bucket ON activity_chunks (last_bucket_ms);
  `,
  `
  -- When each placement was last written into a row, as the time that row is purged by (a batch's
  -- end_ms, a chunk's last_bucket_ms; placement-table.ts), so that placements of nodes long gone
  -- are purged too. Rows written before this column carry the latest such time the database holds,
  -- which no row referring to them can be past.
  ALTER TABLE placements ADD COLUMN last_ms REAL NOT NULL DEFAULT 0;
  UPDATE placements SET last_ms = coalesce((
    SELECT max(at) FROM (
      SELECT max(end_ms) AS at FROM attempt_batches
      UNION ALL SELECT max(last_bucket_ms) FROM activity_chunks
      UNION ALL SELECT max(CAST(json_extract(sample.value, '$[0]') AS REAL))
        FROM activity_log, json_each(activity_log.body) AS sample
    )
  ), 0);
  CREATE INDEX placements_by_last_use ON placements (last_ms);
  `,
  `
  -- The Kafka serve role's incident parts (incident-part-table.ts): each detect partition's view
  -- of an incident, merged into the incident served. IF NOT EXISTS: the serve role created this
  -- table itself before it was part of the schema, and its databases already hold it.
  CREATE TABLE IF NOT EXISTS kafka_incident_parts (
    incident_id TEXT NOT NULL,
    partition INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (incident_id, partition)
  ) WITHOUT ROWID;
  `,
];

/** Applies the migrations the database lacks, up to `targetVersion` (tests stop earlier); returns the latest. */
export function migrate(db: Database, targetVersion = MIGRATIONS.length): number {
  const applied = db.pragma('user_version', { simple: true }) as number;
  for (let version = applied; version < targetVersion; version++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[version]!);
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
  return MIGRATIONS.length;
}
