import type { NodeActivity, Placement } from '@keyscope/attempts';
import type { Database, Statement } from 'better-sqlite3';
import type { PlacementTable } from './placement-table.ts';

export interface ActivityTableOptions {
  /** Where logged samples' placements get their ids, shared with the attempt log. */
  placements: PlacementTable;
  /** Transactions whose activity is logged before it is folded into the table; default 64. */
  foldEveryRows?: number;
}

const DEFAULT_FOLD_EVERY_ROWS = 64;

/**
 * A logged sample, as a row of `activity_log` holds it (a JSON array of these):
 *   [bucketStartUnixMillis, bucketMillis, placementId, spans, errors]
 */
type LoggedSample = [number, number, number, number, number];

/** Counts of one node and bucket. */
interface Counted {
  placement: Placement;
  bucketStartUnixMillis: number;
  bucketMillis: number;
  spans: number;
  errors: number;
}

/**
 * Node activity in SQLite: the counts of SERVER spans per node and second that a restarted
 * detector reloads to re-infer a failover.
 *
 * Every transaction on the ingest path adds the latest second's counts of every node that served
 * spans — about fifty nodes per commit in the bench's workload — and an upsert costs SQLite and
 * better-sqlite3 about 4 µs whatever it holds. So a transaction writes its counts as one row of
 * `activity_log`, and the counts also go into an in-memory sum; every `foldEveryRows` rows (at the
 * end of the transaction that reaches it) the sum is upserted into `activity` and the log emptied.
 * Consecutive transactions mostly count the same nodes and seconds: in the bench's workload a fold
 * of 64 transactions upserts ~1,050 rows, where those transactions upserted ~3,300 one by one.
 *
 * Nothing committed is lost: the log is durable with the transaction that wrote it, and whatever it
 * holds at open is folded then. After a failed transaction (or savepoint) SQLite rolled back its
 * log rows, and the sum is read again from the log (`afterRollback`). Reads add the sum to the
 * table's rows, so they see every committed count whether folded or not.
 */
export class ActivityTable {
  readonly #db: Database;
  readonly #foldEveryRows: number;
  readonly #placements: PlacementTable;
  /** Counts logged since the last fold, by service, node and bucket. */
  readonly #unfolded = new NodeBucketCounts();
  #loggedRows = 0;
  readonly #log: Statement;
  readonly #upsert: Statement;

  constructor(db: Database, options: ActivityTableOptions) {
    this.#db = db;
    this.#placements = options.placements;
    this.#foldEveryRows = options.foldEveryRows ?? DEFAULT_FOLD_EVERY_ROWS;
    this.#log = db.prepare('INSERT INTO activity_log (body) VALUES (?)');
    this.#upsert = db.prepare(
      `INSERT INTO activity (bucket_start_ms, service, node, bucket_ms, placement, spans, errors) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (bucket_start_ms, service, node) DO UPDATE SET spans = spans + excluded.spans, errors = errors + excluded.errors`,
    );
    this.#readLog();
    // At open, whatever an earlier process logged and did not fold.
    if (this.#loggedRows > 0) db.transaction(() => this.fold())();
  }

  /**
   * Adds `samples` (counts add up; order does not matter) as one log row, samples of one node and
   * bucket summed first. Must run inside a transaction.
   */
  record(samples: readonly NodeActivity[]): void {
    if (samples.length === 0) return;
    const merged = new NodeBucketCounts();
    for (const sample of samples) merged.add(sample, sample.spans, sample.errors);
    const logged: LoggedSample[] = [];
    for (const counted of merged.values()) {
      logged.push([
        counted.bucketStartUnixMillis,
        counted.bucketMillis,
        this.#placements.idOf(counted.placement),
        counted.spans,
        counted.errors,
      ]);
      this.#unfolded.add(counted, counted.spans, counted.errors);
    }
    this.#log.run(JSON.stringify(logged));
    this.#loggedRows++;
  }

  /** Folds the log into the table once it holds `foldEveryRows` rows; inside the caller's transaction. */
  foldIfDue(): void {
    if (this.#loggedRows >= this.#foldEveryRows) this.fold();
  }

  /** Upserts the counts logged since the last fold and empties the log; inside the caller's transaction. */
  fold(): void {
    if (this.#loggedRows === 0) return;
    for (const counted of this.#unfolded.values()) {
      const p = counted.placement;
      this.#upsert.run(
        counted.bucketStartUnixMillis,
        p.service,
        p.node,
        counted.bucketMillis,
        JSON.stringify(p),
        counted.spans,
        counted.errors,
      );
    }
    this.#db.prepare('DELETE FROM activity_log').run();
    this.#unfolded.clear();
    this.#loggedRows = 0;
  }

  /** After a failed transaction: the sum is read again from the log rows SQLite kept. */
  afterRollback(): void {
    this.#readLog();
  }

  /** Node activity from the latest bucket back `windowMillis`, in (bucket, service, node) order. */
  recent(windowMillis: number): NodeActivity[] {
    let latest = this.#db.prepare('SELECT max(bucket_start_ms) FROM activity').pluck().get() as number | null;
    for (const counted of this.#unfolded.values()) {
      if (latest === null || counted.bucketStartUnixMillis > latest) latest = counted.bucketStartUnixMillis;
    }
    if (latest === null) return [];
    const from = latest - windowMillis;
    const rows = this.#db
      .prepare(
        'SELECT placement, bucket_start_ms, bucket_ms, spans, errors FROM activity WHERE bucket_start_ms >= ?',
      )
      .all(from) as {
      placement: string;
      bucket_start_ms: number;
      bucket_ms: number;
      spans: number;
      errors: number;
    }[];
    const recent = new NodeBucketCounts();
    for (const row of rows) {
      const counted: Counted = {
        placement: JSON.parse(row.placement) as Placement,
        bucketStartUnixMillis: row.bucket_start_ms,
        bucketMillis: row.bucket_ms,
        spans: row.spans,
        errors: row.errors,
      };
      recent.add(counted, counted.spans, counted.errors);
    }
    for (const counted of this.#unfolded.values()) {
      if (counted.bucketStartUnixMillis >= from) recent.add(counted, counted.spans, counted.errors);
    }
    return [...recent.values()]
      .sort(
        (a, b) =>
          a.bucketStartUnixMillis - b.bucketStartUnixMillis ||
          compare(a.placement.service, b.placement.service) ||
          compare(a.placement.node, b.placement.node),
      )
      .map((counted) => ({ ...counted, placement: { ...counted.placement } }));
  }

  /** Rows waiting in the log; for tests. */
  get loggedRows(): number {
    return this.#loggedRows;
  }

  #readLog(): void {
    this.#unfolded.clear();
    const bodies = this.#db.prepare('SELECT body FROM activity_log ORDER BY id').pluck().all() as string[];
    for (const body of bodies) {
      for (const [bucketStart, bucketMillis, placementId, spans, errors] of JSON.parse(
        body,
      ) as LoggedSample[]) {
        const sample = {
          placement: this.#placements.placement(placementId),
          bucketStartUnixMillis: bucketStart,
          bucketMillis,
        };
        this.#unfolded.add(sample, spans, errors);
      }
    }
    this.#loggedRows = bodies.length;
  }
}

/**
 * Counts by service, node and bucket (what a row of `activity` is keyed by), in nested maps so
 * that adding a sample builds no key.
 */
class NodeBucketCounts {
  readonly #byService = new Map<string, Map<string, Map<number, Counted>>>();

  add(
    sample: Pick<NodeActivity, 'placement' | 'bucketStartUnixMillis' | 'bucketMillis'>,
    spans: number,
    errors: number,
  ): void {
    const { service, node } = sample.placement;
    let byNode = this.#byService.get(service);
    if (byNode === undefined) {
      byNode = new Map();
      this.#byService.set(service, byNode);
    }
    let byBucket = byNode.get(node);
    if (byBucket === undefined) {
      byBucket = new Map();
      byNode.set(node, byBucket);
    }
    const counted = byBucket.get(sample.bucketStartUnixMillis);
    if (counted === undefined) {
      byBucket.set(sample.bucketStartUnixMillis, {
        placement: sample.placement,
        bucketStartUnixMillis: sample.bucketStartUnixMillis,
        bucketMillis: sample.bucketMillis,
        spans,
        errors,
      });
    } else {
      counted.spans += spans;
      counted.errors += errors;
    }
  }

  *values(): IterableIterator<Counted> {
    for (const byNode of this.#byService.values()) {
      for (const byBucket of byNode.values()) yield* byBucket.values();
    }
  }

  clear(): void {
    this.#byService.clear();
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
