import type { Placement } from '@keyscope/attempts';
import type { Database, Statement } from 'better-sqlite3';

/**
 * The placements (service, node, cluster, region, zone) the attempt batches and the activity log
 * refer to by a small integer instead of repeating five strings per attempt and sample: in the
 * bench's workload a batch went from 56.8 to 37.8 KB with them gone, an activity log row from
 * ~10–13 to 2.3 KB. A placement is a node of the fleet, so the table grows with the nodes ever
 * seen (pods that come and go add rows, a hundred bytes or so each; nothing purges them).
 *
 * All of it is held in memory, read at open. A placement first seen in a transaction is inserted
 * in it; if the transaction fails, `afterRollback` reads the table again, so no id handed out by
 * a rolled-back insert stays in use.
 */
export class PlacementTable {
  readonly #db: Database;
  readonly #insert: Statement;
  /** By id; index 0 unused (ids start at 1). */
  #byId: (Placement | undefined)[] = [];
  /** Ids by the five fields joined with NUL. */
  #idByFields = new Map<string, number>();
  /** Ids by object: the extractor hands out one frozen placement per resource, so most lookups end here. */
  #idByObject = new WeakMap<Placement, number>();

  constructor(db: Database) {
    this.#db = db;
    this.#insert = db.prepare(
      'INSERT INTO placements (service, node, cluster, region, zone) VALUES (?, ?, ?, ?, ?)',
    );
    this.#read();
  }

  /** The placement's id, inserting it when new; inside the caller's transaction. */
  idOf(placement: Placement): number {
    const known = this.#idByObject.get(placement);
    if (known !== undefined) return known;
    const fields = fieldsOf(placement);
    let id = this.#idByFields.get(fields);
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
      this.#remember(id, { ...placement }, fields);
    }
    this.#idByObject.set(placement, id);
    return id;
  }

  /** The placement an id stands for. */
  placement(id: number): Placement {
    const placement = this.#byId[id];
    if (placement === undefined) throw new Error(`attempt log: no placement ${id} in the placements table`);
    return placement;
  }

  /** After a failed transaction: ids it inserted are gone from the table, so from here too. */
  afterRollback(): void {
    this.#read();
  }

  #read(): void {
    this.#byId = [];
    this.#idByFields = new Map();
    this.#idByObject = new WeakMap();
    const rows = this.#db
      .prepare('SELECT id, service, node, cluster, region, zone FROM placements')
      .all() as (Placement & { id: number })[];
    for (const { id, service, node, cluster, region, zone } of rows) {
      const placement = { service, node, cluster, region, zone };
      this.#remember(id, placement, fieldsOf(placement));
    }
  }

  #remember(id: number, placement: Placement, fields: string): void {
    this.#byId[id] = Object.freeze(placement);
    this.#idByFields.set(fields, id);
  }
}

function fieldsOf(p: Placement): string {
  return `${p.service}\u0000${p.node}\u0000${p.cluster}\u0000${p.region}\u0000${p.zone}`;
}
