import type { Attempt, Outcome, ScopeLevel } from '@keyscope/attempts';
import type { AttemptLog } from '@keyscope/detector';
import type { Database, Statement } from 'better-sqlite3';

/** What a read needs of an attempt's row (`a`): the body, and the fields it leaves to columns. */
const ROW = 'a.key, a.trace_id, a.span_id, a.body';

interface AttemptRow {
  key: string;
  trace_id: string;
  span_id: string;
  body: string;
}

/**
 * The attempt as stored: a JSON array of its fields in a fixed order, without the key and ids
 * (columns already) — about half the bytes of the object form rows were first written in, and
 * cheaper to write and to parse. `attemptOf` reads both forms.
 *
 *   [kind, tenant, parentSpanId, startUnixMillis, endUnixMillis,
 *    service, node, cluster, region, zone, operation, ...kind's own fields]
 *   server: outcome, store, scope · client: resendCount, target, statusCode, error · arrival: none
 */
function bodyOf(a: Attempt): string {
  const p = a.placement;
  const fields: unknown[] = [a.kind, a.tenant, a.parentSpanId, a.startUnixMillis, a.endUnixMillis];
  fields.push(p.service, p.node, p.cluster, p.region, p.zone, a.operation);
  if (a.kind === 'server') fields.push(a.outcome, a.store, a.scope);
  else if (a.kind === 'client') fields.push(a.resendCount, a.target, a.statusCode, a.error);
  return JSON.stringify(fields);
}

/** The attempt of a row, in either body form; properties in the order the extractor creates them. */
function attemptOf(row: AttemptRow): Attempt {
  if (row.body.charCodeAt(0) !== 0x5b /* [ */) {
    // The object form. Rows written before the key and ids left the body hold them in both.
    const attempt = JSON.parse(row.body) as Attempt;
    attempt.key = row.key;
    attempt.traceId = row.trace_id;
    attempt.spanId = row.span_id;
    return attempt;
  }
  const f = JSON.parse(row.body) as (string | number)[];
  const text = (i: number) => f[i] as string;
  const number = (i: number) => f[i] as number;
  const base = {
    key: row.key,
    tenant: text(1),
    traceId: row.trace_id,
    spanId: row.span_id,
    parentSpanId: text(2),
    startUnixMillis: number(3),
    endUnixMillis: number(4),
    placement: { service: text(5), node: text(6), cluster: text(7), region: text(8), zone: text(9) },
    operation: text(10),
  };
  if (f[0] === 'server') {
    return {
      kind: 'server',
      ...base,
      outcome: text(11) as Outcome,
      store: text(12),
      scope: text(13) as ScopeLevel | '',
    };
  }
  if (f[0] === 'client') {
    return {
      kind: 'client',
      ...base,
      resendCount: number(11),
      target: text(12),
      statusCode: number(13),
      error: text(14),
    };
  }
  return { kind: 'arrival', ...base };
}

export interface AttemptTableOptions {
  /** Appended attempts that trigger indexing at the end of a transaction. */
  indexBatchRows: number;
}

/**
 * The attempt log in SQLite, with its key index maintained in batches behind the ingest path.
 *
 * Attempts arrive in idempotency-key order, which is random: a B-tree keyed by partition key made
 * every attempt dirty its own index page, and each commit wrote every dirty page to the WAL — four
 * KiB per attempt, most of the cost of persisting one (measured: ~34k attempts/s with the index
 * maintained per insert, ~120k/s appending alone). So `append` only appends the row (the table is
 * in insertion order) and remembers the attempt in an in-memory tail; once `indexBatchRows`
 * attempts are waiting, the transaction that appended them also inserts their index entries,
 * sorted, into `attempt_keys`, where a batch lands on each index page many entries at a time.
 *
 * Redelivery is still refused exactly: an attempt is new unless the tail or the index holds its
 * (partition key, trace id, span id). A crash loses nothing: unindexed rows are the ones past
 * `attempt_index.indexed_through`, indexed when the store opens. After a failed transaction the
 * tail is read back from the database (`afterRollback`), since SQLite rolled its rows back.
 */
export class AttemptTable implements AttemptLog {
  readonly #db: Database;
  readonly #options: AttemptTableOptions;
  /**
   * Attempts appended since the last indexing, by partition key, kept whole: a key met for the
   * first time looks up its history (`attemptsOf`) right after appending to it, and reading that
   * back from the table cost a query and a JSON parse per new key.
   */
  readonly #tail = new Map<string, Attempt[]>();
  #tailSize = 0;
  readonly #insert: Statement;
  readonly #indexed: Statement;
  readonly #byKey: Statement;

  constructor(db: Database, options: AttemptTableOptions) {
    this.#db = db;
    this.#options = options;
    this.#insert = db.prepare(
      'INSERT INTO attempts (partition_key, trace_id, span_id, key, end_ms, body) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#indexed = db
      .prepare('SELECT 1 FROM attempt_keys WHERE partition_key = ? AND trace_id = ? AND span_id = ?')
      .pluck();
    this.#byKey = db.prepare(
      `SELECT ${ROW} FROM attempt_keys k JOIN attempts a ON a.id = k.attempt_id WHERE k.partition_key = ?`,
    );
    this.indexPending();
  }

  append(partitionKey: string, attempt: Attempt): boolean {
    const { traceId, spanId } = attempt;
    const waiting = this.#tail.get(partitionKey);
    if (waiting?.some((tailed) => tailed.spanId === spanId && tailed.traceId === traceId)) return false;
    if (this.#indexed.get(partitionKey, traceId, spanId) !== undefined) return false;
    this.#insert.run(partitionKey, traceId, spanId, attempt.key, attempt.endUnixMillis, bodyOf(attempt));
    if (waiting === undefined) this.#tail.set(partitionKey, [attempt]);
    else waiting.push(attempt);
    this.#tailSize++;
    return true;
  }

  attemptsOf(partitionKey: string): Attempt[] {
    const rows = this.#byKey.all(partitionKey) as AttemptRow[];
    const attempts = rows.map(attemptOf);
    for (const tailed of this.#tail.get(partitionKey) ?? []) attempts.push(tailed);
    return attempts;
  }

  /** Retention runs in chunks (`KeyscopeStore.purge`), off the ingest path: nothing to do here. */
  expire(): void {}

  /**
   * Attempts of every partition key `matches` accepts among those `indexedSql` selects from
   * `attempt_keys` (as `k`) with `parameters`, plus the tail's. For the API's key lookup.
   */
  attemptsWhere(
    indexedSql: string,
    parameters: object,
    matches: (partitionKey: string) => boolean,
  ): Attempt[] {
    const rows = this.#db
      .prepare(`SELECT ${ROW} FROM attempt_keys k JOIN attempts a ON a.id = k.attempt_id WHERE ${indexedSql}`)
      .all(parameters) as AttemptRow[];
    const attempts = rows.map(attemptOf);
    for (const [partitionKey, entries] of this.#tail) {
      if (!matches(partitionKey)) continue;
      attempts.push(...entries);
    }
    return attempts;
  }

  /**
   * After a failed transaction: SQLite rolled back its rows (and any indexing it did), so the
   * tail is read again from what the database holds past `indexed_through`.
   */
  afterRollback(): void {
    this.#tail.clear();
    this.#tailSize = 0;
    const rows = this.#db
      .prepare(`SELECT a.partition_key, ${ROW} FROM attempts a WHERE a.id > ? ORDER BY a.id`)
      .all(this.#indexedThrough()) as (AttemptRow & { partition_key: string })[];
    for (const row of rows) {
      const entry = attemptOf(row);
      const waiting = this.#tail.get(row.partition_key);
      if (waiting === undefined) this.#tail.set(row.partition_key, [entry]);
      else waiting.push(entry);
      this.#tailSize++;
    }
  }

  /** Indexes the tail when it has grown to a batch; inside the caller's transaction. */
  indexIfDue(): void {
    if (this.#tailSize >= this.#options.indexBatchRows) this.indexPending();
  }

  /** Moves every appended attempt into the key index, sorted so each index page is written once. */
  indexPending(): void {
    const through = this.#indexedThrough();
    this.#db.transaction(() => {
      this.#db
        .prepare(
          `INSERT OR IGNORE INTO attempt_keys (partition_key, trace_id, span_id, attempt_id)
           SELECT partition_key, trace_id, span_id, id FROM attempts WHERE id > ?
           ORDER BY partition_key, trace_id, span_id`,
        )
        .run(through);
      this.#db
        .prepare(
          'UPDATE attempt_index SET indexed_through = (SELECT max(?, coalesce(max(id), 0)) FROM attempts)',
        )
        .run(through);
    })();
    this.#tail.clear();
    this.#tailSize = 0;
  }

  /** Attempts waiting in the tail. */
  get pendingRows(): number {
    return this.#tailSize;
  }

  /**
   * Deletes up to `maxRows` attempts that ended before `beforeUnixMillis`, with their index
   * entries. The tail is indexed first (purges run every few seconds, so under little traffic that
   * is what bounds how long an attempt waits for the index); the largest id, which the next
   * insert's id follows, is never deleted.
   */
  purge(beforeUnixMillis: number, maxRows: number): number {
    if (this.#tailSize > 0) this.indexPending();
    const rows = this.#db
      .prepare(
        'SELECT id, partition_key, trace_id, span_id FROM attempts WHERE end_ms < ? AND id < ? LIMIT ?',
      )
      .all(beforeUnixMillis, this.#indexedThrough(), maxRows) as {
      id: number;
      partition_key: string;
      trace_id: string;
      span_id: string;
    }[];
    const deleteKey = this.#db.prepare(
      'DELETE FROM attempt_keys WHERE partition_key = ? AND trace_id = ? AND span_id = ? AND attempt_id = ?',
    );
    const deleteRow = this.#db.prepare('DELETE FROM attempts WHERE id = ?');
    for (const row of rows) {
      deleteKey.run(row.partition_key, row.trace_id, row.span_id, row.id);
      deleteRow.run(row.id);
    }
    return rows.length;
  }

  #indexedThrough(): number {
    return this.#db.prepare('SELECT indexed_through FROM attempt_index').pluck().get() as number;
  }
}
