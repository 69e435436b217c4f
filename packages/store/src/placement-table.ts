import type { Placement } from '@keyscope/attempts';
import type { Database, Statement } from 'better-sqlite3';

/**
 * How far a placement's last use may run ahead of the `last_ms` its row holds before the row is
 * written again: a placement in steady use costs one UPDATE per hour of event time, not one per
 * transaction, and is purged at most this much later than it could be.
 */
export const PLACEMENT_USE_GRANULE_MILLIS = 3_600_000;

/**
 * The placements (service, node, cluster, region, zone) the attempt batches and the activity log
 * refer to by a small integer instead of repeating five strings per attempt and sample: in the
 * bench's workload a batch is 37.8 KB with ids against 56.8 KB with the strings, an activity log
 * row 2.3 KB against ~10–13. A placement is a node of the fleet, and pods that come and go with every
 * deploy add rows, so a placement no stored row can refer to any more is purged (`purge`).
 *
 * All of it is held in memory, read at open. A placement first seen in a transaction is inserted
 * in it; if the transaction fails, `afterRollback` reads the table again, so no id handed out by
 * a rolled-back insert stays in use.
 *
 * Each row's `last_ms` bounds the event time of every row that refers to it: the attempt table
 * and the activity table `stamp` the ids they wrote with the batch's `end_ms` or the chunk's
 * `last_bucket_ms`, the times their own purges go by, in the same transaction as the rows. It is
 * written only when a stamp passes it by more than PLACEMENT_USE_GRANULE_MILLIS, so every
 * referring row's time is below `last_ms` + the granule.
 */
export class PlacementTable {
  readonly #db: Database;
  readonly #insert: Statement;
  readonly #touch: Statement;
  /** By id; index 0 unused (ids start at 1). */
  #byId: (Placement | undefined)[] = [];
  /** `last_ms` of each row, by id. */
  #lastMs: number[] = [];
  /** Ids by the five fields joined with NUL. */
  #idByFields = new Map<string, number>();
  /** Ids by object: the extractor hands out one frozen placement per resource, so most lookups end here. */
  #idByObject = new WeakMap<Placement, number>();
  /** Ids handed out since the last `stamp`: written into rows whose time is not stamped yet. */
  readonly #unstamped: number[] = [];
  /** By id: the `#stamps` count when the id last went into `#unstamped`. */
  readonly #noted: number[] = [];
  #stamps = 0;

  constructor(db: Database) {
    this.#db = db;
    this.#insert = db.prepare(
      'INSERT INTO placements (service, node, cluster, region, zone, last_ms) VALUES (?, ?, ?, ?, ?, 0)',
    );
    this.#touch = db.prepare('UPDATE placements SET last_ms = ? WHERE id = ?');
    this.#read();
  }

  /** The placement's id, inserting it when new; inside the caller's transaction. */
  idOf(placement: Placement): number {
    let id = this.#idByObject.get(placement);
    if (id === undefined) {
      const fields = fieldsOf(placement);
      id = this.#idByFields.get(fields);
      if (id === undefined) {
        id = Number(
          this.#insert.run(
            placement.service,
            placement.node,
            placement.cluster,
            placement.region,
            placement.zone,
          ).lastInsertRowid,
        );
        this.#remember(id, { ...placement }, fields, 0);
      }
      this.#idByObject.set(placement, id);
    }
    if (this.#noted[id] !== this.#stamps) {
      this.#noted[id] = this.#stamps;
      this.#unstamped.push(id);
    }
    return id;
  }

  /**
   * Notes that the rows written since the last stamp, which refer to the ids handed out since,
   * are purged by `atUnixMillis` (a batch's `end_ms`, a chunk's `last_bucket_ms`); inside the
   * transaction that wrote them.
   */
  stamp(atUnixMillis: number): void {
    for (const id of this.#unstamped) {
      if (atUnixMillis > this.#lastMs[id]! + PLACEMENT_USE_GRANULE_MILLIS) {
        this.#touch.run(atUnixMillis, id);
        this.#lastMs[id] = atUnixMillis;
      }
    }
    this.#unstamped.length = 0;
    this.#stamps++;
  }

  /** The placement an id stands for. */
  placement(id: number): Placement {
    const placement = this.#byId[id];
    if (placement === undefined) throw new Error(`attempt log: no placement ${id} in the placements table`);
    return placement;
  }

  /**
   * Deletes up to `maxRows` placements that no stored row can refer to any more: last used (to
   * the granule) before `beforeUnixMillis` and before every attempt batch and activity chunk
   * still stored; how many went. Inside the caller's transaction, after the activity log is
   * folded (its rows are not stamped until then). Ids handed out but not yet stamped stay.
   */
  purge(beforeUnixMillis: number, maxRows: number): number {
    const oldestReferring = this.#db
      .prepare(
        'SELECT min(at) FROM (SELECT min(end_ms) AS at FROM attempt_batches UNION ALL SELECT min(last_bucket_ms) FROM activity_chunks)',
      )
      .pluck()
      .get() as number | null;
    const bound = Math.min(beforeUnixMillis, oldestReferring ?? Number.POSITIVE_INFINITY);
    const candidates = this.#db
      .prepare('SELECT id FROM placements WHERE last_ms < ? ORDER BY last_ms LIMIT ?')
      .pluck()
      .all(bound - PLACEMENT_USE_GRANULE_MILLIS, maxRows) as number[];
    const remove = this.#db.prepare('DELETE FROM placements WHERE id = ?');
    let removed = 0;
    for (const id of candidates) {
      if (this.#noted[id] === this.#stamps) continue;
      remove.run(id);
      this.#idByFields.delete(fieldsOf(this.#byId[id]!));
      this.#byId[id] = undefined;
      removed++;
    }
    // An extractor's placement object may outlive its row, and must not find the old id.
    if (removed > 0) this.#idByObject = new WeakMap();
    return removed;
  }

  /** After a failed transaction: ids it inserted are gone from the table, so from here too. */
  afterRollback(): void {
    this.#read();
  }

  #read(): void {
    this.#byId = [];
    this.#lastMs = [];
    this.#idByFields = new Map();
    this.#idByObject = new WeakMap();
    this.#unstamped.length = 0;
    this.#stamps++;
    const rows = this.#db
      .prepare('SELECT id, service, node, cluster, region, zone, last_ms FROM placements')
      .all() as (Placement & { id: number; last_ms: number })[];
    for (const { id, service, node, cluster, region, zone, last_ms } of rows) {
      const placement = { service, node, cluster, region, zone };
      this.#remember(id, placement, fieldsOf(placement), last_ms);
    }
  }

  #remember(id: number, placement: Placement, fields: string, lastMs: number): void {
    this.#byId[id] = Object.freeze(placement);
    this.#lastMs[id] = lastMs;
    this.#idByFields.set(fields, id);
  }
}

function fieldsOf(p: Placement): string {
  return `${p.service}\u0000${p.node}\u0000${p.cluster}\u0000${p.region}\u0000${p.zone}`;
}
