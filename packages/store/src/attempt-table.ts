import type { Attempt, Outcome, ScopeLevel } from '@keyscope/attempts';
import type { AttemptLog } from '@keyscope/detector';
import type { Database, Statement } from 'better-sqlite3';
import { KeyFilter } from './key-filter.ts';

/** What a read needs of a group's row (`g`). */
const ROW = 'g.key, g.body';

interface GroupRow {
  key: string;
  body: string;
}

/**
 * An attempt as a group's body holds it: a JSON array of its fields in a fixed order, without the
 * key (a column of the group already).
 *
 *   [traceId, spanId, kind, tenant, parentSpanId, startUnixMillis, endUnixMillis,
 *    service, node, cluster, region, zone, operation, ...kind's own fields]
 *   server: outcome, store, scope · client: resendCount, target, statusCode, error · arrival: none
 *
 * Attempts migrated from the one-row-per-attempt table keep that row's body after the ids: the
 * same fields from `kind` on, or an object (the first form rows were written in).
 */
function entryOf(a: Attempt): unknown[] {
  const p = a.placement;
  const fields: unknown[] = [a.traceId, a.spanId, a.kind, a.tenant, a.parentSpanId];
  fields.push(a.startUnixMillis, a.endUnixMillis, p.service, p.node, p.cluster, p.region, p.zone);
  fields.push(a.operation);
  if (a.kind === 'server') fields.push(a.outcome, a.store, a.scope);
  else if (a.kind === 'client') fields.push(a.resendCount, a.target, a.statusCode, a.error);
  return fields;
}

/** The attempt of a group entry, in either form; properties in the order the extractor creates them. */
function attemptOf(key: string, f: unknown[]): Attempt {
  const traceId = f[0] as string;
  const spanId = f[1] as string;
  if (typeof f[2] === 'object') {
    // The object form. Rows written before the key and ids left the body hold them in both.
    const attempt = f[2] as Attempt;
    attempt.key = key;
    attempt.traceId = traceId;
    attempt.spanId = spanId;
    return attempt;
  }
  const text = (i: number) => f[i] as string;
  const number = (i: number) => f[i] as number;
  const base = {
    key,
    tenant: text(3),
    traceId,
    spanId,
    parentSpanId: text(4),
    startUnixMillis: number(5),
    endUnixMillis: number(6),
    placement: { service: text(7), node: text(8), cluster: text(9), region: text(10), zone: text(11) },
    operation: text(12),
  };
  if (f[2] === 'server') {
    return {
      kind: 'server',
      ...base,
      outcome: text(13) as Outcome,
      store: text(14),
      scope: text(15) as ScopeLevel | '',
    };
  }
  if (f[2] === 'client') {
    return {
      kind: 'client',
      ...base,
      resendCount: number(13),
      target: text(14),
      statusCode: number(15),
      error: text(16),
    };
  }
  return { kind: 'arrival', ...base };
}

/** The attempts of groups, in order. */
function attemptsOfRows(rows: readonly GroupRow[]): Attempt[] {
  const attempts: Attempt[] = [];
  for (const row of rows) {
    for (const entry of JSON.parse(row.body) as unknown[][]) attempts.push(attemptOf(row.key, entry));
  }
  return attempts;
}

/** Whether `attempts` holds `attempt`'s span. */
function holds(attempts: readonly Attempt[], attempt: Attempt): boolean {
  for (const known of attempts) {
    if (known.spanId === attempt.spanId && known.traceId === attempt.traceId) return true;
  }
  return false;
}

export interface AttemptTableOptions {
  /** Appended attempts that trigger indexing at the end of a transaction. */
  indexBatchRows: number;
}

/** A partition key's attempts appended since the last indexing; the first `written` are in a row. */
interface Tailed {
  attempts: Attempt[];
  written: number;
}

/** The key filter's capacity when the index holds few keys. */
const MIN_FILTER_KEYS = 65_536;
/** Keys read from the index per step of a key filter rebuild: tens of milliseconds of work. */
const REBUILD_STEP_KEYS = 50_000;

/** A key filter being filled from the index a step at a time, while the current one answers. */
interface FilterRebuild {
  readonly filter: KeyFilter;
  /** The last partition key read; the next step starts there ('' before the first). */
  from: string;
}

/**
 * The attempt log in SQLite: one row per partition key and transaction (`attempt_groups`), with a
 * key index (`attempt_group_keys`) maintained in batches behind the ingest path.
 *
 * What it costs is rows, not bytes: an INSERT through better-sqlite3 takes a few microseconds
 * whatever the row holds, and a key's attempts mostly arrive together — the client attempt and
 * the server spans it caused, in one payload (3 to 3.4 attempts per key and transaction in the
 * bench's workload, for one to four payloads per transaction). So `append` only keeps the attempt
 * in an in-memory tail, and `flush`, at the end of the transaction (`KeyscopeStore.transaction`),
 * writes one row per partition key it touched.
 *
 * Attempts arrive in idempotency-key order, which is random: a B-tree keyed by partition key made
 * every insert dirty its own index page, and each commit wrote every dirty page to the WAL. So the
 * rows append (the table is in insertion order), and once `indexBatchRows` attempts are waiting,
 * the transaction that wrote them also inserts their groups' index entries, sorted, where a batch
 * lands on each index page many entries at a time.
 *
 * Redelivery is refused exactly: an attempt is new unless the tail or an indexed group holds its
 * (partition key, trace id, span id). A Bloom filter of the partition keys in the index (built at
 * open, added to as batches are indexed) spares the attempts of keys it never held — most of them —
 * the index lookups. Once it holds more keys than it was sized for, a new one, sized for twice the
 * index's entries, is filled from the index 50,000 keys per indexing and then takes over: no
 * transaction on the ingest path reads the whole index. A crash loses nothing committed: unindexed groups are the ones past
 * `attempt_index.indexed_through`, indexed when the store opens. After a failed transaction the
 * tail is read back from the database (`afterRollback`), since SQLite rolled its rows back.
 */
export class AttemptTable implements AttemptLog {
  readonly #db: Database;
  readonly #options: AttemptTableOptions;
  /** Attempts appended since the last indexing, by partition key, kept whole. */
  readonly #tail = new Map<string, Tailed>();
  #tailSize = 0;
  /** Partition keys with attempts appended since the last `flush`, in the order first appended. */
  readonly #unwritten: string[] = [];
  /** The partition keys the index holds (and, until the next rebuild, some it held). */
  #indexedKeys: KeyFilter;
  /** A larger or fresher filter being filled, a step per indexing, to replace `#indexedKeys`. */
  #rebuild: FilterRebuild | undefined;
  /** Entries in `attempt_group_keys`: counted at open, then kept up to date; sizes the filter. */
  #indexEntries: number;
  readonly #keysFrom: Statement;
  readonly #insert: Statement;
  readonly #byKey: Statement;

  constructor(db: Database, options: AttemptTableOptions) {
    this.#db = db;
    this.#options = options;
    this.#insert = db.prepare(
      'INSERT INTO attempt_groups (partition_key, key, end_ms, body) VALUES (?, ?, ?, ?)',
    );
    this.#byKey = db.prepare(
      `SELECT ${ROW} FROM attempt_group_keys k JOIN attempt_groups g ON g.id = k.group_id WHERE k.partition_key = ?`,
    );
    this.#keysFrom = db
      .prepare(
        'SELECT DISTINCT partition_key FROM attempt_group_keys WHERE partition_key >= ? ORDER BY partition_key LIMIT ?',
      )
      .pluck();
    this.#indexEntries = db.prepare('SELECT count(*) FROM attempt_group_keys').pluck().get() as number;
    this.#indexedKeys = new KeyFilter(MIN_FILTER_KEYS);
    this.indexPending();
    // At open, all at once: nothing is waiting on the store yet.
    const opening = this.#startRebuild();
    while (!this.#stepRebuild(opening));
    this.#indexedKeys = opening.filter;
  }

  /** Must run inside a transaction (`KeyscopeStore.transaction`), whose end writes the attempt. */
  append(partitionKey: string, attempt: Attempt): boolean {
    if (!this.#db.inTransaction) throw new Error('attempts are appended inside KeyscopeStore.transaction');
    const tailed = this.#tail.get(partitionKey);
    if (tailed !== undefined && holds(tailed.attempts, attempt)) return false;
    if (this.#indexedKeys.mayContain(partitionKey) && holds(this.#indexed(partitionKey), attempt)) {
      return false;
    }
    if (tailed === undefined) {
      this.#tail.set(partitionKey, { attempts: [attempt], written: 0 });
      this.#unwritten.push(partitionKey);
    } else {
      if (tailed.written === tailed.attempts.length) this.#unwritten.push(partitionKey);
      tailed.attempts.push(attempt);
    }
    this.#tailSize++;
    return true;
  }

  attemptsOf(partitionKey: string): Attempt[] {
    const attempts = this.#indexedKeys.mayContain(partitionKey) ? this.#indexed(partitionKey) : [];
    const tailed = this.#tail.get(partitionKey);
    if (tailed !== undefined) for (const attempt of tailed.attempts) attempts.push(attempt);
    return attempts;
  }

  /** Retention runs in chunks (`KeyscopeStore.purge`), off the ingest path: nothing to do here. */
  expire(): void {}

  /**
   * Attempts of every partition key `matches` accepts among those `indexedSql` selects from
   * `attempt_group_keys` (as `k`) with `parameters`, plus the tail's. For the API's key lookup.
   */
  attemptsWhere(
    indexedSql: string,
    parameters: object,
    matches: (partitionKey: string) => boolean,
  ): Attempt[] {
    const rows = this.#db
      .prepare(
        `SELECT ${ROW} FROM attempt_group_keys k JOIN attempt_groups g ON g.id = k.group_id WHERE ${indexedSql}`,
      )
      .all(parameters) as GroupRow[];
    const attempts = attemptsOfRows(rows);
    for (const [partitionKey, tailed] of this.#tail) {
      if (matches(partitionKey)) attempts.push(...tailed.attempts);
    }
    return attempts;
  }

  /** Writes one row per partition key appended to since the last flush; inside the caller's transaction. */
  flush(): void {
    for (const partitionKey of this.#unwritten) {
      const tailed = this.#tail.get(partitionKey)!;
      const { attempts } = tailed;
      const entries: unknown[][] = [];
      let end = Number.NEGATIVE_INFINITY;
      for (let i = tailed.written; i < attempts.length; i++) {
        const attempt = attempts[i]!;
        entries.push(entryOf(attempt));
        if (attempt.endUnixMillis > end) end = attempt.endUnixMillis;
      }
      this.#insert.run(partitionKey, attempts[tailed.written]!.key, end, JSON.stringify(entries));
      tailed.written = attempts.length;
    }
    this.#unwritten.length = 0;
  }

  /**
   * After a failed transaction: SQLite rolled back its rows (and any indexing it did), so the
   * tail is read again from what the database holds past `indexed_through`.
   */
  afterRollback(): void {
    this.#tail.clear();
    this.#tailSize = 0;
    this.#unwritten.length = 0;
    const rows = this.#db
      .prepare(`SELECT g.partition_key, ${ROW} FROM attempt_groups g WHERE g.id > ? ORDER BY g.id`)
      .all(this.#indexedThrough()) as (GroupRow & { partition_key: string })[];
    for (const row of rows) {
      const attempts = attemptsOfRows([row]);
      const tailed = this.#tail.get(row.partition_key);
      if (tailed === undefined) this.#tail.set(row.partition_key, { attempts, written: attempts.length });
      else {
        tailed.attempts.push(...attempts);
        tailed.written = tailed.attempts.length;
      }
      this.#tailSize += attempts.length;
    }
  }

  /** Indexes the tail when it has grown to a batch; inside the caller's transaction. */
  indexIfDue(): void {
    if (this.#tailSize >= this.#options.indexBatchRows) this.indexPending();
  }

  /** Writes what waits, then moves every group past the index into it, sorted so each index page is written once. */
  indexPending(): void {
    const through = this.#indexedThrough();
    this.#db.transaction(() => {
      this.flush();
      this.#indexEntries += this.#db
        .prepare(
          `INSERT OR IGNORE INTO attempt_group_keys (partition_key, group_id)
           SELECT partition_key, id FROM attempt_groups WHERE id > ? ORDER BY partition_key, id`,
        )
        .run(through).changes;
      this.#db
        .prepare(
          'UPDATE attempt_index SET indexed_through = (SELECT max(?, coalesce(max(id), 0)) FROM attempt_groups)',
        )
        .run(through);
    })();
    // Added before the outer transaction commits: if it rolls back, the filter holds keys the
    // index does not, which costs a lookup that finds nothing, never a wrong answer.
    for (const partitionKey of this.#tail.keys()) {
      this.#indexedKeys.add(partitionKey);
      this.#rebuild?.filter.add(partitionKey);
    }
    this.#tail.clear();
    this.#tailSize = 0;
    // A filter past its capacity answers "maybe" more and more often (purged keys stay in it too):
    // a new one is filled from the index a step per indexing, so no single transaction reads all
    // of it (seconds for tens of millions of keys), and swapped in when full.
    if (this.#rebuild === undefined && this.#indexedKeys.size > this.#indexedKeys.capacity) {
      this.#rebuild = this.#startRebuild();
    }
    if (this.#rebuild !== undefined && this.#stepRebuild(this.#rebuild)) {
      this.#indexedKeys = this.#rebuild.filter;
      this.#rebuild = undefined;
    }
  }

  /** Whether the key filter is being rebuilt, and the capacity of the one answering; for tests. */
  get keyFilter(): { capacity: number; rebuilding: boolean } {
    return { capacity: this.#indexedKeys.capacity, rebuilding: this.#rebuild !== undefined };
  }

  /** Attempts waiting in the tail. */
  get pendingRows(): number {
    return this.#tailSize;
  }

  /**
   * Deletes up to `maxRows` groups whose attempts all ended before `beforeUnixMillis`, with their
   * index entries, and returns how many attempts went. The tail is indexed first (purges run
   * every few seconds, so under little traffic that is what bounds how long an attempt waits for
   * the index); the largest id, which the next insert's id follows, is never deleted. The key
   * filter keeps purged keys until it is rebuilt.
   */
  purge(beforeUnixMillis: number, maxRows: number): number {
    if (this.#tailSize > 0) this.indexPending();
    const rows = this.#db
      .prepare(
        'SELECT id, partition_key, json_array_length(body) AS attempts FROM attempt_groups WHERE end_ms < ? AND id < ? LIMIT ?',
      )
      .all(beforeUnixMillis, this.#indexedThrough(), maxRows) as {
      id: number;
      partition_key: string;
      attempts: number;
    }[];
    const deleteKey = this.#db.prepare(
      'DELETE FROM attempt_group_keys WHERE partition_key = ? AND group_id = ?',
    );
    const deleteRow = this.#db.prepare('DELETE FROM attempt_groups WHERE id = ?');
    let removed = 0;
    for (const row of rows) {
      this.#indexEntries -= deleteKey.run(row.partition_key, row.id).changes;
      deleteRow.run(row.id);
      removed += row.attempts;
    }
    return removed;
  }

  /** Attempts stored, written or waiting. */
  count(): number {
    const stored = this.#db
      .prepare('SELECT coalesce(sum(json_array_length(body)), 0) FROM attempt_groups')
      .pluck()
      .get() as number;
    let unwritten = 0;
    for (const partitionKey of this.#unwritten) {
      const tailed = this.#tail.get(partitionKey)!;
      unwritten += tailed.attempts.length - tailed.written;
    }
    return stored + unwritten;
  }

  /** The attempts of the partition key's indexed groups. */
  #indexed(partitionKey: string): Attempt[] {
    return attemptsOfRows(this.#byKey.all(partitionKey) as GroupRow[]);
  }

  /** An empty filter with room for twice the keys the index holds (entries bound the keys). */
  #startRebuild(): FilterRebuild {
    return { filter: new KeyFilter(Math.max(MIN_FILTER_KEYS, 2 * this.#indexEntries)), from: '' };
  }

  /** Adds the index's next keys to the rebuilt filter; true once it holds them all. */
  #stepRebuild(rebuild: FilterRebuild): boolean {
    // From the last key read, inclusive: the step reads it again, which costs one add.
    const keys = this.#keysFrom.all(rebuild.from, REBUILD_STEP_KEYS) as string[];
    for (const key of keys) rebuild.filter.add(key);
    if (keys.length < REBUILD_STEP_KEYS) return true;
    rebuild.from = keys[keys.length - 1]!;
    return false;
  }

  #indexedThrough(): number {
    return this.#db.prepare('SELECT indexed_through FROM attempt_index').pluck().get() as number;
  }
}
