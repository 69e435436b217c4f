import type { Database } from 'better-sqlite3';
import { StatementCache } from './statement-cache.ts';

/** A delivery to enqueue: one page's trigger or resolve, to one sink. */
export interface OutboxEnqueue {
  sink: string;
  dedupKey: string;
  incidentId: string;
  payload: unknown;
  dueUnixMillis: number;
}

/** A delivery due to be sent. */
export interface OutboxEntry {
  id: number;
  sink: string;
  dedupKey: string;
  incidentId: string;
  payload: unknown;
  attempts: number;
}

/** How a delivery stands, for the API and the alerter. */
export interface OutboxDelivery {
  sink: string;
  dedupKey: string;
  attempts: number;
  delivered: boolean;
  lastError: string | null;
}

/** The alert outbox, as the alerter and the API use it (packages/alerts' `AlertOutbox` is a part of it). */
export interface Outbox {
  /** Enqueues a delivery unless one with the same (sink, dedup key) exists; true when enqueued. */
  enqueue(entry: OutboxEnqueue): boolean;
  /** The dedup keys of a sink's deliveries that start with `prefix` (ASCII), from its unique index. */
  keysStartingWith(sink: string, prefix: string): string[];
  /** Up to `limit` undelivered entries whose next attempt is due, the earliest due first. */
  due(nowUnixMillis: number, limit: number): OutboxEntry[];
  markDelivered(id: number, nowUnixMillis: number): void;
  /** Counts a failed attempt and sets when the next is due. */
  markFailed(id: number, error: string, nextAttemptUnixMillis: number): void;
  /** Gives up on a delivery the target refused for good (e.g. 400: the payload will never be accepted). */
  markAbandoned(id: number, error: string, nowUnixMillis: number): void;
  /** Every delivery of an incident's alerts, in the order they were enqueued. */
  deliveriesOf(incidentId: string): OutboxDelivery[];
  /** Deliveries neither delivered nor given up on: what metrics read at each scrape. */
  pending(): number;
}

/**
 * The `outbox` table: alert deliveries, one per (sink, dedup key), kept until delivered (or given
 * up on) and past that until retention, so a page is enqueued once however often its incident is
 * upserted. Enqueued in the transaction that stores the incident: the page exists if and only if
 * the incident was committed.
 */
export class OutboxTable implements Outbox {
  readonly #statements: StatementCache;

  constructor(db: Database) {
    this.#statements = new StatementCache(db);
  }

  enqueue(entry: OutboxEnqueue): boolean {
    return (
      this.#statements
        .get(
          'INSERT OR IGNORE INTO outbox (sink, dedup_key, incident_id, payload, next_attempt_ms) VALUES (?, ?, ?, ?, ?)',
        )
        .run(entry.sink, entry.dedupKey, entry.incidentId, JSON.stringify(entry.payload), entry.dueUnixMillis)
        .changes === 1
    );
  }

  keysStartingWith(sink: string, prefix: string): string[] {
    return this.#statements
      .get('SELECT dedup_key FROM outbox WHERE sink = ? AND dedup_key >= ? AND dedup_key < ?')
      .pluck()
      .all(sink, prefix, `${prefix}\uffff`) as string[];
  }

  due(nowUnixMillis: number, limit: number): OutboxEntry[] {
    const rows = this.#statements
      .get(
        `SELECT id, sink, dedup_key AS dedupKey, incident_id AS incidentId, payload, attempts FROM outbox
         WHERE delivered_ms IS NULL AND next_attempt_ms <= ? ORDER BY next_attempt_ms, id LIMIT ?`,
      )
      .all(nowUnixMillis, limit) as (Omit<OutboxEntry, 'payload'> & { payload: string })[];
    return rows.map((row) => ({ ...row, payload: JSON.parse(row.payload) }));
  }

  markDelivered(id: number, nowUnixMillis: number): void {
    this.#statements
      .get('UPDATE outbox SET delivered_ms = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?')
      .run(nowUnixMillis, id);
  }

  markFailed(id: number, error: string, nextAttemptUnixMillis: number): void {
    this.#statements
      .get('UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_ms = ? WHERE id = ?')
      .run(error, nextAttemptUnixMillis, id);
  }

  markAbandoned(id: number, error: string, nowUnixMillis: number): void {
    this.#statements
      .get(
        "UPDATE outbox SET attempts = attempts + 1, last_error = 'abandoned: ' || ?, delivered_ms = ? WHERE id = ?",
      )
      .run(error, nowUnixMillis, id);
  }

  deliveriesOf(incidentId: string): OutboxDelivery[] {
    return (
      this.#statements
        .get(
          'SELECT sink, dedup_key, attempts, delivered_ms, last_error FROM outbox WHERE incident_id = ? ORDER BY id',
        )
        .all(incidentId) as {
        sink: string;
        dedup_key: string;
        attempts: number;
        delivered_ms: number | null;
        last_error: string | null;
      }[]
    ).map((row) => ({
      sink: row.sink,
      dedupKey: row.dedup_key,
      attempts: row.attempts,
      delivered: row.delivered_ms !== null,
      lastError: row.last_error,
    }));
  }

  pending(): number {
    return this.#statements
      .get('SELECT count(*) FROM outbox WHERE delivered_ms IS NULL')
      .pluck()
      .get() as number;
  }

  /** Deletes up to `maxRows` deliveries that ended before the time (retention.ts); how many went. */
  purgeDeliveredBefore(beforeUnixMillis: number, maxRows: number): number {
    return this.#statements
      .get('DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE delivered_ms < ? LIMIT ?)')
      .run(beforeUnixMillis, maxRows).changes;
  }

  /** Deletes the incidents' deliveries that ended, never a pending one (size-bound.ts); how many went. */
  deleteDeliveredOfIncidents(incidentIds: readonly string[]): number {
    return this.#statements
      .get(
        'DELETE FROM outbox WHERE delivered_ms IS NOT NULL AND incident_id IN (SELECT value FROM json_each(?))',
      )
      .run(JSON.stringify(incidentIds)).changes;
  }
}
