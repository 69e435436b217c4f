import { addLatency, emptyLatency, type NodeActivity, type Placement } from '@keyscope/attempts';
import type { Database, Statement } from 'better-sqlite3';
import type { PlacementTable } from './placement-table.ts';

export interface ActivityTableOptions {
  /** Where logged samples' placements get their ids, shared with the attempt log. */
  placements: PlacementTable;
}

/** Log rows (transactions) whose activity is folded into one chunk. */
const FOLD_EVERY_ROWS = 64;

/**
 * A logged sample, as a row of `activity_log` or `activity_chunks` holds it (a JSON array of these):
 *   [bucketStartUnixMillis, bucketMillis, placementId, spans, errors, latency?]
 * where `latency` is the sample's duration histogram (`NodeActivity.latency`), absent when none
 * of the counts summed into it carried one.
 */
type LoggedSample = [number, number, number, number, number, number[]?];

/** Counts of one node and bucket. */
interface Counted {
  placement: Placement;
  bucketStartUnixMillis: number;
  bucketMillis: number;
  spans: number;
  errors: number;
  latency?: number[];
}

/**
 * Node activity in SQLite: the counts of SERVER spans (and their duration histograms) per node and
 * second that a restarted detector reloads to re-infer a failover.
 *
 * Every transaction on the ingest path adds the latest second's counts of every node that served
 * spans — about fifty nodes per commit in the bench's workload — and a row costs SQLite and
 * better-sqlite3 about 4 µs whatever it holds. So a transaction writes its counts as one row of
 * `activity_log`, and the counts also go into an in-memory sum; every FOLD_EVERY_ROWS rows (at the
 * end of the transaction that reaches it) the sum is written as one row of `activity_chunks` and
 * the log emptied (as a row per node and second, the sum would be ~1,050 upserts per fold in the
 * bench's workload). Reads merge the chunks and the sum; purges drop a chunk once all its
 * buckets are past the window.
 *
 * Nothing committed is lost: the log is durable with the transaction that wrote it, and whatever it
 * holds at open is folded then. After a failed transaction (or savepoint) SQLite rolled back its
 * log rows, and the sum is read again from the log (`afterRollback`). Reads add the sum to the
 * chunks, so they see every committed count whether folded or not.
 */
export class ActivityTable {
  readonly #db: Database;
  readonly #placements: PlacementTable;
  /** Counts logged since the last fold, by service, node and bucket. */
  readonly #unfolded = new NodeBucketCounts();
  #loggedRows = 0;
  readonly #log: Statement;
  readonly #chunk: Statement;

  constructor(db: Database, options: ActivityTableOptions) {
    this.#db = db;
    this.#placements = options.placements;
    this.#log = db.prepare('INSERT INTO activity_log (body) VALUES (?)');
    this.#chunk = db.prepare(
      'INSERT INTO activity_chunks (first_bucket_ms, last_bucket_ms, body) VALUES (?, ?, ?)',
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
    for (const sample of samples) merged.add(sample, sample.spans, sample.errors, sample.latency);
    const logged: LoggedSample[] = [];
    for (const counted of merged.values()) {
      logged.push(this.#logged(counted));
      this.#unfolded.add(counted, counted.spans, counted.errors, counted.latency);
    }
    this.#log.run(JSON.stringify(logged));
    this.#loggedRows++;
  }

  /** Folds the log into a chunk once it holds FOLD_EVERY_ROWS rows; inside the caller's transaction. */
  foldIfDue(): void {
    if (this.#loggedRows >= FOLD_EVERY_ROWS) this.fold();
  }

  /** Writes the counts logged since the last fold as one chunk and empties the log; inside the caller's transaction. */
  fold(): void {
    if (this.#loggedRows === 0) return;
    const samples: LoggedSample[] = [];
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    for (const counted of this.#unfolded.values()) {
      samples.push(this.#logged(counted));
      if (counted.bucketStartUnixMillis < first) first = counted.bucketStartUnixMillis;
      if (counted.bucketStartUnixMillis > last) last = counted.bucketStartUnixMillis;
    }
    this.#chunk.run(first, last, JSON.stringify(samples));
    // The chunk is purged by its last bucket: so, at the earliest, are the placements it refers to.
    this.#placements.stamp(last);
    this.#db.prepare('DELETE FROM activity_log').run();
    this.#unfolded.clear();
    this.#loggedRows = 0;
  }

  /** Deletes up to `maxRows` chunks whose buckets all start before `beforeUnixMillis`; how many went. */
  purge(beforeUnixMillis: number, maxRows: number): number {
    return this.#db
      .prepare(
        'DELETE FROM activity_chunks WHERE id IN (SELECT id FROM activity_chunks WHERE last_bucket_ms < ? LIMIT ?)',
      )
      .run(beforeUnixMillis, maxRows).changes;
  }

  /** After a failed transaction: the sum is read again from the log rows SQLite kept. */
  afterRollback(): void {
    this.#readLog();
  }

  /** Node activity from the latest bucket back `windowMillis`, in (bucket, service, node) order. */
  recent(windowMillis: number): NodeActivity[] {
    let latest = this.#db.prepare('SELECT max(last_bucket_ms) FROM activity_chunks').pluck().get() as
      | number
      | null;
    for (const counted of this.#unfolded.values()) {
      if (latest === null || counted.bucketStartUnixMillis > latest) latest = counted.bucketStartUnixMillis;
    }
    if (latest === null) return [];
    const from = latest - windowMillis;
    const recent = new NodeBucketCounts();
    const chunks = this.#db
      .prepare('SELECT body FROM activity_chunks WHERE last_bucket_ms >= ?')
      .pluck()
      .all(from) as string[];
    for (const body of chunks) this.#addLogged(recent, body, from);
    for (const counted of this.#unfolded.values()) {
      if (counted.bucketStartUnixMillis >= from)
        recent.add(counted, counted.spans, counted.errors, counted.latency);
    }
    return [...recent.values()]
      .sort(
        (a, b) =>
          a.bucketStartUnixMillis - b.bucketStartUnixMillis ||
          compare(a.placement.service, b.placement.service) ||
          compare(a.placement.node, b.placement.node),
      )
      .map((counted) => {
        const sample: NodeActivity = { ...counted, placement: { ...counted.placement } };
        if (counted.latency !== undefined) sample.latency = [...counted.latency];
        return sample;
      });
  }

  /** Rows waiting in the log; for tests. */
  get loggedRows(): number {
    return this.#loggedRows;
  }

  #readLog(): void {
    this.#unfolded.clear();
    const bodies = this.#db.prepare('SELECT body FROM activity_log ORDER BY id').pluck().all() as string[];
    for (const body of bodies) this.#addLogged(this.#unfolded, body, Number.NEGATIVE_INFINITY);
    this.#loggedRows = bodies.length;
  }

  /** A sample as the log and the chunks hold it. */
  #logged(counted: Counted): LoggedSample {
    const placementId = this.#placements.idOf(counted.placement);
    const logged: LoggedSample = [
      counted.bucketStartUnixMillis,
      counted.bucketMillis,
      placementId,
      counted.spans,
      counted.errors,
    ];
    if (counted.latency !== undefined) logged.push(counted.latency);
    return logged;
  }

  /** Adds the samples of a log row or chunk (JSON) whose buckets start at `from` or later to `counts`. */
  #addLogged(counts: NodeBucketCounts, body: string, from: number): void {
    for (const [bucketStart, bucketMillis, placementId, spans, errors, latency] of JSON.parse(
      body,
    ) as LoggedSample[]) {
      if (bucketStart < from) continue;
      const sample = {
        placement: this.#placements.placement(placementId),
        bucketStartUnixMillis: bucketStart,
        bucketMillis,
      };
      counts.add(sample, spans, errors, latency);
    }
  }
}

/** Counts by service, node and bucket, in nested maps so that adding a sample builds no key. */
class NodeBucketCounts {
  readonly #byService = new Map<string, Map<string, Map<number, Counted>>>();

  add(
    sample: Pick<NodeActivity, 'placement' | 'bucketStartUnixMillis' | 'bucketMillis'>,
    spans: number,
    errors: number,
    latency: readonly number[] | undefined,
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
      const created: Counted = {
        placement: sample.placement,
        bucketStartUnixMillis: sample.bucketStartUnixMillis,
        bucketMillis: sample.bucketMillis,
        spans,
        errors,
      };
      if (latency !== undefined) created.latency = [...latency];
      byBucket.set(sample.bucketStartUnixMillis, created);
    } else {
      counted.spans += spans;
      counted.errors += errors;
      if (latency !== undefined) addLatency((counted.latency ??= emptyLatency()), latency);
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
