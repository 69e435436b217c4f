import type { DetectorChanges, FindingClass, Incident } from '@keyscope/detector';
import type { Database } from 'better-sqlite3';
import { TENANT_OF_FINDING } from './finding-table.ts';
import { type Page, type PageResult, readPage } from './page.ts';
import { StatementCache } from './statement-cache.ts';

export interface IncidentFilter {
  status?: 'open' | 'resolved';
  class?: FindingClass;
  service?: string;
  sinceUnixMillis?: number;
  untilUnixMillis?: number;
  tenant?: string;
}

/** An incident as the API serves it: the detector's view plus what people did to it. */
export interface StoredIncident extends Incident {
  acknowledged: boolean;
  acknowledgedUnixMillis: number | null;
  acknowledgedBy: string | null;
  resolvedBy: string | null;
}

/** The stored incidents, as the API and the alerter read them and people act on them. */
export interface Incidents {
  list(filter: IncidentFilter, page: Page): PageResult<StoredIncident>;
  get(id: string, tenant?: string): StoredIncident | undefined;
  /** Marks the incident acknowledged, unless it already is; the incident after, undefined when unknown. */
  acknowledge(id: string, by: string, nowUnixMillis: number): StoredIncident | undefined;
  /** Resolves an open incident by hand: it stays resolved until it gains keys. The incident after. */
  resolve(id: string, by: string, nowUnixMillis: number): StoredIncident | undefined;
  /** Incidents open now: what metrics read at each scrape. */
  openCount(): number;
}

/** A tenant sees an incident that holds at least one of its findings (finding-table.ts). */
const TENANT_OF_INCIDENT = `EXISTS (SELECT 1 FROM findings WHERE findings.incident_id = incidents.id AND ${TENANT_OF_FINDING})`;
const INCIDENT_COLUMNS = 'status, acknowledged_ms, acknowledged_by, resolved_manually_ms, resolved_by';

interface IncidentRow {
  body: string;
  status: 'open' | 'resolved';
  acknowledged_ms: number | null;
  acknowledged_by: string | null;
  resolved_manually_ms: number | null;
  resolved_by: string | null;
}

/** The `incidents` table: the detector's incidents and what people did to them (migrations.ts). */
export class IncidentTable implements Incidents {
  readonly #statements: StatementCache;

  constructor(db: Database) {
    this.#statements = new StatementCache(db);
  }

  /** Deletes the retracted incidents and upserts the others; an upsert keeps the row's seq. */
  write(changes: Pick<DetectorChanges, 'incidents' | 'retractedIncidentIds'>): void {
    // A manual resolve holds until the incident gains keys; the detector's own status otherwise.
    const upsert = this.#statements.get(
      `INSERT INTO incidents (id, service, class, status, keys, opened_ms, last_finding_ms, body)
       VALUES (@id, @service, @class, @status, @keys, @opened, @lastFinding, @body)
       ON CONFLICT (id) DO UPDATE SET
         status = CASE WHEN incidents.resolved_manually_ms IS NOT NULL AND excluded.keys <= incidents.keys
                       THEN 'resolved' ELSE excluded.status END,
         resolved_manually_ms = CASE WHEN excluded.keys > incidents.keys THEN NULL ELSE incidents.resolved_manually_ms END,
         resolved_by = CASE WHEN excluded.keys > incidents.keys THEN NULL ELSE incidents.resolved_by END,
         keys = excluded.keys, opened_ms = excluded.opened_ms, last_finding_ms = excluded.last_finding_ms,
         body = excluded.body`,
    );
    const remove = this.#statements.get('DELETE FROM incidents WHERE id = ?');
    for (const id of changes.retractedIncidentIds) remove.run(id);
    for (const incident of changes.incidents) {
      upsert.run({
        id: incident.id,
        service: incident.service,
        class: incident.class,
        status: incident.status,
        keys: incident.keys,
        opened: incident.openedUnixMillis,
        lastFinding: incident.lastFindingUnixMillis,
        body: JSON.stringify(incident),
      });
    }
  }

  list(filter: IncidentFilter, page: Page): PageResult<StoredIncident> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.status !== undefined) where.push('status = ?') && params.push(filter.status);
    if (filter.class !== undefined) where.push('class = ?') && params.push(filter.class);
    if (filter.service !== undefined) where.push('service = ?') && params.push(filter.service);
    if (filter.sinceUnixMillis !== undefined)
      where.push('last_finding_ms >= ?') && params.push(filter.sinceUnixMillis);
    if (filter.untilUnixMillis !== undefined)
      where.push('opened_ms < ?') && params.push(filter.untilUnixMillis);
    if (filter.tenant !== undefined) where.push(TENANT_OF_INCIDENT) && params.push(filter.tenant);
    return readPage(
      this.#statements,
      { table: 'incidents', columns: `seq, body, ${INCIDENT_COLUMNS}`, where, params },
      page,
      (row: IncidentRow & { seq: number }) => storedIncident(row),
    );
  }

  get(id: string, tenant?: string): StoredIncident | undefined {
    const row = this.#statements
      .get(
        `SELECT body, ${INCIDENT_COLUMNS} FROM incidents WHERE id = ? AND (? IS NULL OR ${TENANT_OF_INCIDENT})`,
      )
      .get(id, tenant ?? null, tenant ?? null) as IncidentRow | undefined;
    return row === undefined ? undefined : storedIncident(row);
  }

  acknowledge(id: string, by: string, nowUnixMillis: number): StoredIncident | undefined {
    this.#statements
      .get(
        'UPDATE incidents SET acknowledged_ms = ?, acknowledged_by = ? WHERE id = ? AND acknowledged_ms IS NULL',
      )
      .run(nowUnixMillis, by, id);
    return this.get(id);
  }

  resolve(id: string, by: string, nowUnixMillis: number): StoredIncident | undefined {
    this.#statements
      .get(
        "UPDATE incidents SET status = 'resolved', resolved_manually_ms = ?, resolved_by = ? WHERE id = ? AND status = 'open'",
      )
      .run(nowUnixMillis, by, id);
    return this.get(id);
  }

  openCount(): number {
    return this.#statements
      .get("SELECT count(*) FROM incidents WHERE status = 'open'")
      .pluck()
      .get() as number;
  }

  count(): number {
    return this.#statements.get('SELECT count(*) FROM incidents').pluck().get() as number;
  }

  /** Deletes up to `maxRows` resolved incidents whose last finding is before the time (retention.ts). */
  purgeResolvedBefore(beforeUnixMillis: number, maxRows: number): number {
    return this.#statements
      .get(
        "DELETE FROM incidents WHERE seq IN (SELECT seq FROM incidents WHERE last_finding_ms < ? AND status = 'resolved' LIMIT ?)",
      )
      .run(beforeUnixMillis, maxRows).changes;
  }

  /** The `limit` resolved incidents with the oldest last finding: the size bound's next to go (size-bound.ts). */
  oldestResolvedIds(limit: number): string[] {
    return this.#statements
      .get("SELECT id FROM incidents WHERE status = 'resolved' ORDER BY last_finding_ms LIMIT ?")
      .pluck()
      .all(limit) as string[];
  }

  /** Deletes the incidents; how many went. */
  delete(ids: readonly string[]): number {
    return this.#statements
      .get('DELETE FROM incidents WHERE id IN (SELECT value FROM json_each(?))')
      .run(JSON.stringify(ids)).changes;
  }
}

function storedIncident(row: IncidentRow): StoredIncident {
  const incident = JSON.parse(row.body) as Incident;
  return {
    ...incident,
    status: row.status,
    resolvedUnixMillis: row.resolved_manually_ms ?? incident.resolvedUnixMillis,
    acknowledged: row.acknowledged_ms !== null,
    acknowledgedUnixMillis: row.acknowledged_ms,
    acknowledgedBy: row.acknowledged_by,
    resolvedBy: row.resolved_by,
  };
}
