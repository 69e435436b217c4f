import type { Attempt } from '@keyscope/attempts';
import type { AttemptLog } from '@keyscope/detector';
import type { Database, Statement } from 'better-sqlite3';
import { readAttempts, writeAttempts } from './attempt-codec.ts';
import { AttemptTail, spanIdHash } from './attempt-tail.ts';
import { JsonBytes } from './json-bytes.ts';
import { KeyFilter, keyHash } from './key-filter.ts';
import type { PlacementTable } from './placement-table.ts';

/**
 * What a read needs of a partition key's index entry (`k`) and its batch (`b`): the bytes of the
 * key's array in the batch's body.
 */
const SLICE = 'substr(b.body, k.start, k.length)';

/** A partition key's entry in a batch's `keys`: [partitionKey, start (1-based), length] in bytes of `body`. */
type Located = [string, number, number];

/** The attempts of slices read through the key index, in order. */
function attemptsOfSlices(slices: readonly Buffer[], placements: PlacementTable): Attempt[] {
  const attempts: Attempt[] = [];
  for (const slice of slices) readAttempts(slice.toString('utf8'), placements, attempts);
  return attempts;
}

/** What tells one attempt of a key from another: its trace and span ids. */
function spanIdentity(attempt: Attempt): string {
  return `${attempt.traceId}/${attempt.spanId}`;
}

const NO_ATTEMPTS: readonly Attempt[] = Object.freeze([]);

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
  /** Where entries' placements get their ids, shared with the activity log. */
  placements: PlacementTable;
}

/**
 * Body bytes past which a transaction's attempts go on in another row: the ingest path's
 * transactions write ~40 KB (one row), a Kafka detect batch or a replay may write megabytes.
 */
const BATCH_ROW_BYTES = 64 * 1024;

/**
 * Attempts of one key in the log (tail and index) from which its span identities are kept in
 * memory, so its redelivery check stops reading its history (see `AttemptTable.#hotSpans`).
 */
const HOT_KEY_ATTEMPTS = 64;
/**
 * Span identities kept for hot keys in all, about 80 bytes each (10 MiB); past it the keys made hot
 * first are forgotten (read again from the log if they come back), never the one being appended.
 */
const MAX_HOT_SPANS = 131_072;

/** The key filter's capacity when the index holds few keys. */
const MIN_FILTER_KEYS = 65_536;
/**
 * Index entries the newest generation of the key index takes before an indexing starts the next
 * (see AttemptTable): about 230 pages of B-tree, which is what an indexing writes at most, and one
 * key's lookup checks one filter per 16,384 entries (~330 at 20 million attempts) and reads the
 * generations whose filter holds it. Indexing commits growing a store to a million attempts took
 * 11 ms (median) with generations of 16,384 entries and indexings of 10,000 attempts, 24 ms with
 * 65,536 and 20,000: the commit that indexes is the longest an ingest request regularly waits
 * behind.
 */
const GENERATION_ENTRIES = 16_384;

/**
 * Attempts the tail takes before the transaction that appends them indexes them (the default of
 * `StoreOptions.attemptIndexBatchRows`). An indexing costs its sort and the newest generation's
 * pages, so a smaller step is a shorter commit, more often: growing a store to 600,000 attempts in
 * transactions of 400, indexing commits took 8.3 ms (median) a step of 10,000 attempts, 5.4 ms at
 * 5,000 and 4.1 ms at 2,500, for 12% more time in the store in all; the embedded service's p99 at
 * half load read 0.53–0.85× with steps of 2,500 against 10,000 (three paired runs of twelve
 * passes), at the same persisted rate.
 */
export const INDEX_BATCH_ROWS = 2_500;

/**
 * The batches retention may delete: ended before the cutoff, indexed and older than the last
 * indexed batch (whose id the next insert follows), a chunk at most. Found through the index on
 * their end time: with `id < ?` a rowid range, SQLite preferred that range, which is the whole log,
 * and read every row's end time. The purge that runs every few seconds and finds nothing then took
 * 110–120 ms at 20 million attempts (0.1 ms through the index), and one that found an hour's
 * batches 133 ms (65 ms). The unary `+` leaves the id a filter.
 */
export const EXPIRED_BATCHES =
  'SELECT id, keys, attempts FROM attempt_batches WHERE end_ms < ? AND +id < ? LIMIT ?';

/** A generation of the key index: its entries, the batches they point into, and its keys' filter. */
interface Generation {
  readonly id: number;
  entries: number;
  /** The largest batch id indexed into it: generations hold consecutive ranges of batches. */
  lastBatchId: number;
  readonly keys: KeyFilter;
}
/**
 * Keys read from the index per step of a key filter rebuild, one step per commit: ~5 ms (~1.3 µs
 * a key), so no request's answer waits on a long step.
 */
const REBUILD_STEP_KEYS = 4_096;
/** Keys read per step when the store opens, before anything waits on it. */
const OPEN_REBUILD_STEP_KEYS = 50_000;

/** A key filter being filled from the index a step at a time, while the current one answers. */
interface FilterRebuild {
  readonly filter: KeyFilter;
  /** The last generation and partition key read; the next step starts there. */
  fromGeneration: number;
  from: string;
  /** At open, the generations' own filters are filled by the same reads. */
  readonly generations?: ReadonlyMap<number, Generation>;
}

/**
 * The attempt log in SQLite: one row per transaction (`attempt_batches`), with a key index
 * (`attempt_key_generations`) maintained in batches behind the ingest path.
 *
 * What it costs is rows, not bytes: an INSERT through better-sqlite3 takes a few microseconds
 * whatever the row holds, and a transaction on the ingest path appends the attempts of dozens to
 * thousands of keys. So `append` only keeps the attempt in an in-memory tail, and `flush`, at the
 * end of the transaction (`KeyscopeStore.transaction`), writes one row: per partition key it
 * touched, a JSON array of its attempts (attempt-codec.ts), the arrays concatenated as the row's body,
 * and the byte range of each (`keys`). The index copies those ranges, so a lookup reads one key's
 * bytes of the batch, not all of it. Until the index holds them, the tail remembers where a key's
 * arrays are and a hash of each of their attempts' span ids, not the attempts (see AttemptTail).
 *
 * Attempts arrive in idempotency-key order, which is random: a B-tree keyed by partition key made
 * every insert dirty its own index page, and each commit wrote every dirty page to the WAL. So the
 * rows append (the table is in insertion order), and once `indexBatchRows` attempts are waiting,
 * the transaction that wrote them also inserts their keys' index entries, sorted, where a batch
 * lands on each index page many entries at a time.
 *
 * That holds only while the index is small: once it has more pages than a batch has keys, sorted
 * random keys still land one per page, and every indexing wrote (to the WAL, then the checkpoint
 * to the file) a page per key: 3.8 KB per attempt at 6 million attempts of history, against 0.6 KB
 * on an empty store. So the index is kept in generations: its primary key starts with the
 * generation, an indexing inserts into the newest one only, and a generation takes
 * GENERATION_ENTRIES entries before the next indexing starts a new one. An indexing writes at most
 * the newest generation's pages, whatever the history. A lookup reads the key's entries in each
 * generation whose own Bloom filter (in memory, GENERATION_ENTRIES keys each) may hold it, after
 * the whole index's filter said it may be there at all; a generation and its filter go once
 * retention purged all its entries.
 *
 * Redelivery is refused exactly: an attempt is new unless the tail or an indexed batch holds its
 * (partition key, trace id, span id). A Bloom filter of the partition keys in the index (built at
 * open, added to as batches are indexed) spares the attempts of keys it never held — most of them —
 * the index lookups, and the attempts of a hot key (HOT_KEY_ATTEMPTS or more) are checked against
 * the identities of its attempts kept in memory instead of its rows. Once the filter holds more
 * keys than it was sized for, a new one, sized for twice the index's entries, is filled from the
 * index a step per commit (REBUILD_STEP_KEYS) and then takes over: no transaction on the ingest
 * path reads the whole index. A crash loses nothing committed: unindexed batches are the ones past
 * `attempt_index.indexed_through`, indexed when the store opens. After a
 * failed transaction the tail is read back from the database (`afterRollback`), since SQLite
 * rolled its rows back.
 */
export class AttemptTable implements AttemptLog {
  readonly #db: Database;
  readonly #options: AttemptTableOptions;
  readonly #placements: PlacementTable;
  /** Attempts appended since the last indexing, by partition key (see AttemptTail). */
  readonly #tail = new AttemptTail();
  /** Tail slots of the keys with attempts appended since the last `flush`, in the order first appended. */
  readonly #unwritten: number[] = [];
  /** The partition keys the index holds (and, until the next rebuild, some it held). */
  #indexedKeys: KeyFilter;
  /** A larger or fresher filter being filled, a step per commit, to replace `#indexedKeys`. */
  #rebuild: FilterRebuild | undefined;
  /** Entries in the key index: counted at open, then kept up to date; sizes the filter. */
  #indexEntries: number;
  /** The key index's generations, oldest first; the last takes the next indexing's entries. */
  #generations: Generation[] = [];
  /** Generations whose entries changed since the last commit: what a rollback counts again. */
  readonly #touched = new Set<Generation>();
  readonly #keysFrom: Statement;
  readonly #insert: Statement;
  /** Where `flush` writes a batch's body; reused, grown when a batch needs more. */
  readonly #body = new JsonBytes(2 * BATCH_ROW_BYTES);
  readonly #byKey: Statement;
  readonly #slice: Statement;
  /**
   * For each key with HOT_KEY_ATTEMPTS or more attempts in the log, the identity (trace and span
   * id) of every one of them: such a key's redelivery check is then one lookup, where reading its
   * rows made each append cost the key's whole history (a client sending one constant key on every
   * request). Exact while it lasts: every append adds to it, and it is dropped whenever the log
   * loses attempts (a rollback, a purge).
   */
  readonly #hotSpans = new Map<string, Set<string>>();
  #oldestEnd: Statement | undefined;
  #hotSpanCount = 0;
  /** Attempts decoded from rows, by reads and redelivery checks alike. */
  #attemptsRead = 0;

  constructor(db: Database, options: AttemptTableOptions) {
    this.#db = db;
    this.#options = options;
    this.#placements = options.placements;
    this.#insert = db.prepare(
      'INSERT INTO attempt_batches (end_ms, attempts, keys, body) VALUES (?, ?, ?, ?)',
    );
    this.#byKey = db
      .prepare(
        `SELECT ${SLICE} FROM attempt_key_generations k JOIN attempt_batches b ON b.id = k.batch_id WHERE k.generation = ? AND k.partition_key = ?`,
      )
      .pluck();
    this.#slice = db.prepare('SELECT substr(body, ?, ?) FROM attempt_batches WHERE id = ?').pluck();
    this.#keysFrom = db
      .prepare(
        'SELECT DISTINCT generation, partition_key FROM attempt_key_generations WHERE (generation, partition_key) >= (?, ?) ORDER BY generation, partition_key LIMIT ?',
      )
      .raw();
    this.#indexedKeys = new KeyFilter(MIN_FILTER_KEYS);
    this.#indexEntries = this.#readGenerations();
    this.indexPending();
    // At open, all at once: nothing is waiting on the store yet. The generations' filters are
    // filled by the same reads.
    this.#indexEntries = this.#readGenerations();
    const opening = this.#startRebuild(new Map(this.#generations.map((g) => [g.id, g])));
    while (!this.#stepRebuild(opening, OPEN_REBUILD_STEP_KEYS));
    this.#indexedKeys = opening.filter;
  }

  /** The generations the index holds, with empty filters sized for their entries; how many entries in all. */
  #readGenerations(): number {
    const rows = this.#db
      .prepare(
        'SELECT generation, count(*), max(batch_id) FROM attempt_key_generations GROUP BY generation ORDER BY generation',
      )
      .raw()
      .all() as [number, number, number][];
    this.#generations = rows.map(([id, entries, lastBatchId]) => ({
      id,
      entries,
      lastBatchId,
      keys: new KeyFilter(Math.max(GENERATION_ENTRIES, entries)),
    }));
    let entries = 0;
    for (const generation of this.#generations) entries += generation.entries;
    return entries;
  }

  /** Must run inside a transaction (`KeyscopeStore.transaction`), whose end writes the attempt. */
  append(partitionKey: string, attempt: Attempt): boolean {
    if (!this.#db.inTransaction) throw new Error('attempts are appended inside KeyscopeStore.transaction');
    const tail = this.#tail;
    let slot = tail.slotOf(partitionKey);
    const hot = this.#hotSpans.get(partitionKey);
    if (hot !== undefined) {
      const span = spanIdentity(attempt);
      if (hot.has(span)) return false;
      hot.add(span);
      this.#hotSpanCount++;
      if (slot === -1) slot = tail.add(partitionKey, this.#indexedKeys.mayContain(partitionKey));
      if (tail.addPending(slot, attempt)) this.#unwritten.push(slot);
      this.#trimHotSpans(partitionKey);
      return true;
    }
    // The key filter's answer holds for the life of a tail slot: the index gains keys only when it
    // indexes the tail, which empties the tail.
    let mayBeIndexed: boolean;
    if (slot === -1) mayBeIndexed = this.#indexedKeys.mayContain(partitionKey);
    else {
      if (this.#tailHolds(slot, attempt)) return false;
      mayBeIndexed = tail.mayBeIndexed(slot);
    }
    const indexed = mayBeIndexed ? this.#indexed(partitionKey) : NO_ATTEMPTS;
    if (holds(indexed, attempt)) return false;
    if (slot === -1) slot = tail.add(partitionKey, mayBeIndexed);
    if (tail.addPending(slot, attempt)) this.#unwritten.push(slot);
    if (indexed.length + tail.attemptsIn(slot) >= HOT_KEY_ATTEMPTS)
      this.#keepHotSpans(partitionKey, slot, indexed);
    return true;
  }

  /** Starts keeping the identities of the key's attempts: `indexed`, read from the index, and the tail slot's. */
  #keepHotSpans(partitionKey: string, slot: number, indexed: readonly Attempt[]): void {
    const spans = new Set<string>();
    for (const attempt of indexed) spans.add(spanIdentity(attempt));
    const tailed: Attempt[] = [];
    this.#tailed(slot, tailed);
    for (const attempt of tailed) spans.add(spanIdentity(attempt));
    this.#hotSpans.set(partitionKey, spans);
    this.#hotSpanCount += spans.size;
    this.#trimHotSpans(partitionKey);
  }

  /** Forgets the hot keys kept longest until MAX_HOT_SPANS identities are left, `keep` aside. */
  #trimHotSpans(keep: string): void {
    if (this.#hotSpanCount <= MAX_HOT_SPANS) return;
    for (const [partitionKey, spans] of this.#hotSpans) {
      if (this.#hotSpanCount <= MAX_HOT_SPANS) break;
      if (partitionKey === keep) continue;
      this.#hotSpans.delete(partitionKey);
      this.#hotSpanCount -= spans.size;
    }
  }

  #forgetHotSpans(): void {
    this.#hotSpans.clear();
    this.#hotSpanCount = 0;
  }

  /** Attempts decoded from rows since the table opened; for tests that count what an append costs. */
  get attemptsRead(): number {
    return this.#attemptsRead;
  }

  attemptsOf(partitionKey: string): Attempt[] {
    const attempts = this.#indexedKeys.mayContain(partitionKey) ? this.#indexed(partitionKey) : [];
    const slot = this.#tail.slotOf(partitionKey);
    if (slot !== -1) this.#tailed(slot, attempts);
    return attempts;
  }

  /** Retention runs in chunks (`KeyscopeStore.purge`), off the ingest path: nothing to do here. */
  expire(): void {}

  /**
   * Attempts of every partition key from `from` (inclusive) to `to` (exclusive), in the index
   * (generation by generation) and the tail. For the API's key lookup.
   */
  attemptsBetween(from: string, to: string): Attempt[] {
    const range = this.#db
      .prepare(
        `SELECT ${SLICE} FROM attempt_key_generations k JOIN attempt_batches b ON b.id = k.batch_id
         WHERE k.generation = ? AND k.partition_key >= ? AND k.partition_key < ?`,
      )
      .pluck();
    const slices: Buffer[] = [];
    for (const generation of this.#generations) {
      for (const slice of range.all(generation.id, from, to) as Buffer[]) slices.push(slice);
    }
    const attempts = attemptsOfSlices(slices, this.#placements);
    const matches = (partitionKey: string) => partitionKey >= from && partitionKey < to;
    for (const [partitionKey, slot] of this.#tail.entries()) {
      if (matches(partitionKey)) this.#tailed(slot, attempts);
    }
    return attempts;
  }

  /**
   * Writes the attempts appended since the last flush as one row, or a row per BATCH_ROW_BYTES of
   * body when they are more (a lookup reads its batch's whole body to cut a key's bytes out of
   * it); inside the caller's transaction.
   */
  flush(): void {
    if (this.#unwritten.length === 0) return;
    const tail = this.#tail;
    const body = this.#body;
    body.clear();
    let located: Located[] = [];
    let inRow: number[] = [];
    let attemptCount = 0;
    let end = Number.NEGATIVE_INFINITY;
    for (const slot of this.#unwritten) {
      const pending = tail.pending(slot)!;
      const start = body.length;
      writeAttempts(body, pending, this.#placements);
      located.push([tail.keyOf(slot), start + 1, body.length - start]);
      inRow.push(slot);
      for (const attempt of pending) {
        if (attempt.endUnixMillis > end) end = attempt.endUnixMillis;
      }
      attemptCount += pending.length;
      if (body.length >= BATCH_ROW_BYTES) {
        this.#insertBatch(end, attemptCount, located, inRow);
        body.clear();
        located = [];
        inRow = [];
        attemptCount = 0;
        end = Number.NEGATIVE_INFINITY;
      }
    }
    if (body.length > 0) this.#insertBatch(end, attemptCount, located, inRow);
    this.#unwritten.length = 0;
  }

  /** Inserts a row of `located` arrays, the `inRow` tail slots' in order, and notes where each went. */
  #insertBatch(end: number, attemptCount: number, located: Located[], inRow: number[]): void {
    // better-sqlite3 copies a bound buffer, so the scratch is free again once the insert returns.
    const { lastInsertRowid } = this.#insert.run(
      end,
      attemptCount,
      JSON.stringify(located),
      this.#body.bytes(),
    );
    const id = Number(lastInsertRowid);
    // The row is purged by its end: so, at the earliest, are the placements it refers to.
    this.#placements.stamp(end);
    for (let i = 0; i < located.length; i++) {
      const [, start, length] = located[i]!;
      this.#tail.written(inRow[i]!, id, start, length);
    }
  }

  /**
   * Whether the tail holds `attempt`'s span: among the attempts of the transaction under way, or,
   * when its span id hashes like one written, among those read back from their rows.
   */
  #tailHolds(slot: number, attempt: Attempt): boolean {
    const pending = this.#tail.pending(slot);
    if (pending !== undefined && holds(pending, attempt)) return true;
    if (!this.#tail.mayHoldWritten(slot, spanIdHash(attempt.spanId))) return false;
    const written: Attempt[] = [];
    this.#written(slot, written);
    return holds(written, attempt);
  }

  /** Appends the tail slot's attempts to `into`: those written, read back from their rows, then those pending. */
  #tailed(slot: number, into: Attempt[]): void {
    this.#written(slot, into);
    const pending = this.#tail.pending(slot);
    if (pending !== undefined) for (const attempt of pending) into.push(attempt);
  }

  /** Appends the attempts written in the tail slot's segments to `into`, read back from their rows. */
  #written(slot: number, into: Attempt[]): void {
    const before = into.length;
    this.#tail.forEachSegment(slot, (rowId, start, length) => {
      const slice = this.#slice.get(start, length, rowId) as Buffer;
      readAttempts(slice.toString('utf8'), this.#placements, into);
    });
    this.#attemptsRead += into.length - before;
  }

  /**
   * After a failed transaction: SQLite rolled back its rows (and any indexing it did), so the
   * tail is read again from what the database holds past `indexed_through`.
   */
  afterRollback(): void {
    this.#recountTouched();
    const tail = this.#tail;
    tail.clear();
    this.#unwritten.length = 0;
    this.#forgetHotSpans();
    const rows = this.#db
      .prepare('SELECT id, keys, body FROM attempt_batches WHERE id > ? ORDER BY id')
      .all(this.#indexedThrough()) as { id: number; keys: string; body: Buffer }[];
    for (const row of rows) {
      for (const [partitionKey, start, length] of JSON.parse(row.keys) as Located[]) {
        const attempts = readAttempts(
          row.body.toString('utf8', start - 1, start - 1 + length),
          this.#placements,
        );
        let slot = tail.slotOf(partitionKey);
        if (slot === -1) slot = tail.add(partitionKey, this.#indexedKeys.mayContain(partitionKey));
        tail.addSegment(slot, row.id, start, length);
        for (const attempt of attempts) tail.addHash(slot, spanIdHash(attempt.spanId));
        tail.size += attempts.length;
      }
    }
  }

  /** The outermost transaction committed: what it changed in the generations stays. */
  committed(): void {
    this.#touched.clear();
  }

  /** Counts again the entries of the generations changed since the last commit, as SQLite kept them. */
  #recountTouched(): void {
    const recount = this.#db.prepare(
      'SELECT count(*) AS entries, max(batch_id) AS last FROM attempt_key_generations WHERE generation = ?',
    );
    for (const generation of this.#touched) {
      const { entries, last } = recount.get(generation.id) as { entries: number; last: number | null };
      this.#indexEntries += entries - generation.entries;
      generation.entries = entries;
      const before = this.#generations[this.#generations.indexOf(generation) - 1];
      generation.lastBatchId = last ?? before?.lastBatchId ?? 0;
    }
    this.#touched.clear();
  }

  /** Indexes the tail when it has grown to a batch; inside the caller's transaction. */
  indexIfDue(): void {
    if (this.#tail.size >= this.#options.indexBatchRows) this.indexPending();
  }

  /** Writes what waits, then moves every batch past the index into it, sorted so each index page is written once. */
  indexPending(): void {
    const through = this.#indexedThrough();
    const generation = this.#newestGeneration();
    this.#db.transaction(() => {
      this.flush();
      const added = this.#db
        .prepare(
          `INSERT OR IGNORE INTO attempt_key_generations (generation, partition_key, batch_id, start, length)
           SELECT ?, j.value ->> 0, b.id, j.value ->> 1, j.value ->> 2
           FROM attempt_batches b, json_each(b.keys) j WHERE b.id > ? ORDER BY 2, 3`,
        )
        .run(generation.id, through).changes;
      this.#indexEntries += added;
      generation.entries += added;
      this.#touched.add(generation);
      const { last } = this.#db
        .prepare('SELECT max(?, coalesce(max(id), 0)) AS last FROM attempt_batches')
        .get(through) as { last: number };
      if (added > 0) generation.lastBatchId = last;
      this.#db.prepare('UPDATE attempt_index SET indexed_through = ? WHERE id = 1').run(last);
    })();
    // Added before the outer transaction commits: if it rolls back, the filters hold keys the
    // index does not, which costs a lookup that finds nothing, never a wrong answer; a generation
    // the rollback emptied is an empty one.
    for (const partitionKey of this.#tail.keys()) {
      this.#indexedKeys.add(partitionKey);
      generation.keys.add(partitionKey);
      this.#rebuild?.filter.add(partitionKey);
    }
    this.#tail.clear();
    // A filter past its capacity answers "maybe" more and more often (purged keys stay in it too):
    // a new one is filled from the index a step per commit (stepFilterRebuild), so no transaction
    // reads all of it (seconds for tens of millions of keys), and swapped in when full.
    if (this.#rebuild === undefined && this.#indexedKeys.size > this.#indexedKeys.capacity) {
      this.#rebuild = this.#startRebuild();
    }
  }

  /**
   * A step of the key filter's rebuild, while one is under way: each outermost transaction takes
   * one (`KeyscopeStore.transaction`), so no commit waits for more than a step. Keys indexed
   * meanwhile go into the new filter as they are indexed; it replaces the old one once it holds
   * the whole index.
   */
  stepFilterRebuild(): void {
    if (this.#rebuild !== undefined && this.#stepRebuild(this.#rebuild, REBUILD_STEP_KEYS)) {
      this.#indexedKeys = this.#rebuild.filter;
      this.#rebuild = undefined;
    }
  }

  /** The generation the next indexing inserts into: the newest, or a new one once it holds its share. */
  #newestGeneration(): Generation {
    const newest = this.#generations[this.#generations.length - 1];
    if (newest !== undefined && newest.entries < GENERATION_ENTRIES) return newest;
    const created: Generation = {
      id: newest === undefined ? 1 : newest.id + 1,
      entries: 0,
      lastBatchId: newest?.lastBatchId ?? 0,
      // The tail's keys are what an indexing adds: a replay's may be more than a generation's share.
      keys: new KeyFilter(Math.max(GENERATION_ENTRIES, this.#tail.size)),
    };
    this.#generations.push(created);
    return created;
  }

  /** The key index's generations and their entries, oldest first; for tests. */
  get generations(): { id: number; entries: number }[] {
    return this.#generations.map(({ id, entries }) => ({ id, entries }));
  }

  /** Whether the key filter is being rebuilt, and the capacity of the one answering; for tests. */
  get keyFilter(): { capacity: number; rebuilding: boolean } {
    return { capacity: this.#indexedKeys.capacity, rebuilding: this.#rebuild !== undefined };
  }

  /** Attempts waiting in the tail. */
  get pendingRows(): number {
    return this.#tail.size;
  }

  /**
   * Deletes batches whose attempts all ended before `beforeUnixMillis`, with their index entries,
   * until about `maxRows` index entries went (at least one batch), and returns how many attempts
   * went. The tail is indexed first (purges run every few seconds, so under little traffic that is
   * what bounds how long an attempt waits for the index); the largest id, which the next insert's
   * id follows, is never deleted. The key filter keeps purged keys until it is rebuilt.
   */
  purge(beforeUnixMillis: number, maxRows: number): number {
    if (this.#tail.size > 0) this.indexPending();
    const rows = this.#db.prepare(EXPIRED_BATCHES).all(beforeUnixMillis, this.#indexedThrough(), maxRows) as {
      id: number;
      keys: string;
      attempts: number;
    }[];
    const deleteKey = this.#db.prepare(
      'DELETE FROM attempt_key_generations WHERE generation = ? AND partition_key = ? AND batch_id = ?',
    );
    const deleteRow = this.#db.prepare('DELETE FROM attempt_batches WHERE id = ?');
    let removed = 0;
    let entries = 0;
    for (const row of rows) {
      const generation = this.#generationOf(row.id);
      if (generation !== undefined) this.#touched.add(generation);
      for (const [partitionKey] of JSON.parse(row.keys) as Located[]) {
        if (generation === undefined) break;
        const deleted = deleteKey.run(generation.id, partitionKey, row.id).changes;
        this.#indexEntries -= deleted;
        generation.entries -= deleted;
        entries += deleted;
      }
      deleteRow.run(row.id);
      removed += row.attempts;
      if (entries >= maxRows) break;
    }
    // A generation retention emptied goes with its filter; the newest stays to take entries.
    this.#generations = this.#generations.filter(
      (generation, i) => generation.entries > 0 || i === this.#generations.length - 1,
    );
    if (removed > 0) this.#forgetHotSpans();
    return removed;
  }

  /** The generation a batch's index entries went into: the first whose range reaches its id. */
  #generationOf(batchId: number): Generation | undefined {
    const generations = this.#generations;
    let lo = 0;
    let hi = generations.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (generations[mid]!.lastBatchId < batchId) lo = mid + 1;
      else hi = mid;
    }
    return generations[lo];
  }

  /** Attempts stored, written or waiting. */
  count(): number {
    const stored = this.#db
      .prepare('SELECT coalesce(sum(attempts), 0) FROM attempt_batches')
      .pluck()
      .get() as number;
    let unwritten = 0;
    for (const slot of this.#unwritten) unwritten += this.#tail.pending(slot)!.length;
    return stored + unwritten;
  }

  /** The attempts of the partition key's indexed batches, generation by generation (so in batch order). */
  #indexed(partitionKey: string): Attempt[] {
    const hash = keyHash(partitionKey);
    const slices: Buffer[] = [];
    for (const generation of this.#generations) {
      if (!generation.keys.mayContainHash(hash)) continue;
      for (const slice of this.#byKey.all(generation.id, partitionKey) as Buffer[]) slices.push(slice);
    }
    const attempts = attemptsOfSlices(slices, this.#placements);
    this.#attemptsRead += attempts.length;
    return attempts;
  }

  /** An empty filter with room for twice the keys the index holds (entries bound the keys). */
  #startRebuild(generations?: ReadonlyMap<number, Generation>): FilterRebuild {
    const filter = new KeyFilter(Math.max(MIN_FILTER_KEYS, 2 * this.#indexEntries));
    return generations === undefined
      ? { filter, fromGeneration: 0, from: '' }
      : { filter, fromGeneration: 0, from: '', generations };
  }

  /** Adds the index's next keys to the rebuilt filter (and at open their generations'); true once it holds them all. */
  #stepRebuild(rebuild: FilterRebuild, stepKeys: number): boolean {
    // From the last key read, inclusive: the step reads it again, which costs one add.
    const keys = this.#keysFrom.all(rebuild.fromGeneration, rebuild.from, stepKeys) as [number, string][];
    for (const [generation, key] of keys) {
      rebuild.filter.add(key);
      rebuild.generations?.get(generation)?.keys.add(key);
    }
    if (keys.length < stepKeys) return true;
    [rebuild.fromGeneration, rebuild.from] = keys[keys.length - 1]!;
    return false;
  }

  #indexedThrough(): number {
    return this.#db.prepare('SELECT indexed_through FROM attempt_index').pluck().get() as number;
  }

  /**
   * When the oldest batch the log still holds ended: how far back keyscope's evidence of attempts
   * reaches (older ones went with retention or the size bound). Null while it holds none.
   */
  oldestBatchEndUnixMillis(): number | null {
    this.#oldestEnd ??= this.#db.prepare('SELECT min(end_ms) FROM attempt_batches').pluck();
    return (this.#oldestEnd.get() as number | null) ?? null;
  }
}
