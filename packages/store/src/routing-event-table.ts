import type { DetectorChanges, RoutingEvent, RoutingEventType } from '@keyscope/detector';
import type { Database } from 'better-sqlite3';
import { TENANT_OF_FINDING } from './finding-table.ts';
import { type Page, type PageResult, readPage } from './page.ts';
import { StatementCache } from './statement-cache.ts';

export interface RoutingEventFilter {
  type?: RoutingEventType;
  service?: string;
  /** Only events whose window reaches this time or later. */
  sinceUnixMillis?: number;
  /** Only events whose window starts before this time. */
  untilUnixMillis?: number;
  /** Only events of services where this tenant has a finding, cited by its incidents only. */
  tenant?: string;
}

/** A routing event as the API serves it: the detector's event and the incidents that cite it. */
export interface StoredRoutingEvent extends RoutingEvent {
  /** The stored incidents grouped under the event (`Incident.routingEvent`), oldest first. */
  incidentIds: string[];
}

/** The stored routing events, as the API lists them. */
export interface RoutingEvents {
  list(filter: RoutingEventFilter, page: Page): PageResult<StoredRoutingEvent>;
}

// Routing events are the service's, not a tenant's: a tenant sees those of the services where it
// has a finding of its own (finding-table.ts), as it sees the routing event of each incident that
// holds one, and of the incidents citing them only those that hold one (incident-table.ts).
const TENANT_OF_EVENT = `routing_events.service IN (SELECT findings.service FROM findings WHERE ${TENANT_OF_FINDING})`;
const TENANT_OF_INCIDENT = `EXISTS (SELECT 1 FROM findings WHERE findings.incident_id = incidents.id AND ${TENANT_OF_FINDING})`;
// The expression of the incidents_by_routing_event index (migrations.ts), spelled as it is there.
const EVENT_OF_INCIDENT = "json_extract(incidents.body, '$.routingEvent.id')";

/**
 * The `routing_events` table: every event the detector inferred and has not retracted, kept for
 * `retention.findingsDays` after its window ends, past the detector's own retry horizon
 * (migrations.ts). An event late activity disproves is deleted; one revised keeps its row's seq.
 */
export class RoutingEventTable implements RoutingEvents {
  readonly #statements: StatementCache;

  constructor(db: Database) {
    this.#statements = new StatementCache(db);
  }

  /** Deletes the retracted events and upserts the others; an upsert keeps the row's seq. */
  write(changes: Pick<DetectorChanges, 'routingEvents' | 'retractedRoutingEventIds'>): void {
    const retracted = changes.retractedRoutingEventIds ?? [];
    if (retracted.length > 0) {
      const remove = this.#statements.get('DELETE FROM routing_events WHERE id = ?');
      for (const id of retracted) remove.run(id);
    }
    const events = changes.routingEvents ?? [];
    if (events.length === 0) return;
    const upsert = this.#statements.get(
      `INSERT INTO routing_events (id, type, service, start_ms, end_ms, body)
       VALUES (@id, @type, @service, @start, @end, @body)
       ON CONFLICT (id) DO UPDATE SET type = excluded.type, service = excluded.service,
         start_ms = excluded.start_ms, end_ms = excluded.end_ms, body = excluded.body`,
    );
    for (const event of events) {
      upsert.run({
        id: event.id,
        type: event.type,
        service: event.service,
        start: event.startUnixMillis,
        end: event.endUnixMillis,
        body: JSON.stringify(event),
      });
    }
  }

  list(filter: RoutingEventFilter, page: Page): PageResult<StoredRoutingEvent> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.type !== undefined) where.push('type = ?') && params.push(filter.type);
    if (filter.service !== undefined) where.push('service = ?') && params.push(filter.service);
    if (filter.sinceUnixMillis !== undefined)
      where.push('end_ms >= ?') && params.push(filter.sinceUnixMillis);
    if (filter.untilUnixMillis !== undefined)
      where.push('start_ms < ?') && params.push(filter.untilUnixMillis);
    if (filter.tenant !== undefined) where.push(TENANT_OF_EVENT) && params.push(filter.tenant);
    const events = readPage(
      this.#statements,
      { table: 'routing_events', columns: 'seq, body', where, params },
      page,
      (row: { seq: number; body: string }) => JSON.parse(row.body) as RoutingEvent,
    );
    const citing = this.#citingIncidents(
      events.items.map((event) => event.id),
      filter.tenant,
    );
    return {
      items: events.items.map((event) => ({ ...event, incidentIds: citing.get(event.id) ?? [] })),
      nextCursor: events.nextCursor,
    };
  }

  count(): number {
    return this.#statements.get('SELECT count(*) FROM routing_events').pluck().get() as number;
  }

  /** Deletes up to `maxRows` events whose window ended before the time (retention.ts); how many went. */
  purgeEndedBefore(beforeUnixMillis: number, maxRows: number): number {
    return this.#statements
      .get(
        'DELETE FROM routing_events WHERE seq IN (SELECT seq FROM routing_events WHERE end_ms < ? LIMIT ?)',
      )
      .run(beforeUnixMillis, maxRows).changes;
  }

  /**
   * Deletes up to `maxRows` events no stored incident cites, the earliest ended first
   * (size-bound.ts): history already reported. Those an incident cites go with it.
   */
  purgeUncitedOldest(maxRows: number): number {
    return this.#statements
      .get(
        `DELETE FROM routing_events WHERE seq IN (
           SELECT seq FROM routing_events
           WHERE NOT EXISTS (SELECT 1 FROM incidents WHERE ${EVENT_OF_INCIDENT} = routing_events.id)
           ORDER BY end_ms LIMIT ?)`,
      )
      .run(maxRows).changes;
  }

  /** The ids of the stored incidents (a tenant's, with `tenant`) grouped under each event, oldest first. */
  #citingIncidents(eventIds: readonly string[], tenant: string | undefined): Map<string, string[]> {
    const citing = new Map<string, string[]>();
    if (eventIds.length === 0) return citing;
    const rows = this.#statements
      .get(
        `SELECT incidents.id AS id, ${EVENT_OF_INCIDENT} AS event_id FROM incidents
         WHERE ${EVENT_OF_INCIDENT} IN (SELECT value FROM json_each(?)) AND (? IS NULL OR ${TENANT_OF_INCIDENT})
         ORDER BY incidents.seq`,
      )
      .all(JSON.stringify(eventIds), tenant ?? null, tenant ?? null) as { id: string; event_id: string }[];
    for (const row of rows) {
      const ids = citing.get(row.event_id);
      if (ids === undefined) citing.set(row.event_id, [row.id]);
      else ids.push(row.id);
    }
    return citing;
  }
}
