import type { Incident } from '@keyscope/detector';

/** A delivery due to be sent: one page's trigger or resolve (`payload`, an alert event) to one sink. */
export interface OutboxEntry {
  id: number;
  sink: string;
  dedupKey: string;
  incidentId: string;
  payload: unknown;
  /** Attempts made so far. */
  attempts: number;
}

/**
 * Where the alerter keeps its deliveries, durably: one per (sink, dedup key), enqueued in the
 * transaction that stores the incident, so a page exists if and only if its incident was
 * committed, and is enqueued once however often the incident changes. The service passes the
 * store's outbox (its SQLite table). Calls are synchronous.
 */
export interface AlertOutbox {
  /** Enqueues a delivery unless one with the same (sink, dedup key) exists; true when enqueued. */
  enqueue(entry: {
    sink: string;
    dedupKey: string;
    incidentId: string;
    payload: unknown;
    dueUnixMillis: number;
  }): boolean;
  /** The dedup keys of a sink's deliveries that start with `prefix`. */
  keysStartingWith(sink: string, prefix: string): string[];
  /** Up to `limit` entries neither delivered nor abandoned whose next attempt is due, the earliest first. */
  due(nowUnixMillis: number, limit: number): OutboxEntry[];
  markDelivered(id: number, nowUnixMillis: number): void;
  /** Counts a failed attempt and sets when the next is due. */
  markFailed(id: number, error: string, nextAttemptUnixMillis: number): void;
  /** Gives up on the delivery; its last error reads `abandoned: <error>`. */
  markAbandoned(id: number, error: string, nowUnixMillis: number): void;
  /** Every delivery of an incident's alerts, in the order they were enqueued. */
  deliveriesOf(incidentId: string): {
    sink: string;
    dedupKey: string;
    attempts: number;
    delivered: boolean;
    lastError: string | null;
  }[];
}

/** The stored incidents the alerter reads: as people left them (a manual resolve holds). */
export interface AlertedIncidents {
  get(id: string): Incident | undefined;
  /** A page of the open incidents, newest first; `nextCursor` continues it. */
  list(
    filter: { status: 'open' },
    page: { limit: number; cursor?: string },
  ): { items: Incident[]; nextCursor: string | null };
}
