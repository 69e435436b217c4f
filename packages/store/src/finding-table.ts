import type { DetectorChanges, Finding, FindingClass } from '@keyscope/detector';
import type { Database } from 'better-sqlite3';
import { type Page, type PageResult, readPage } from './page.ts';
import { StatementCache } from './statement-cache.ts';

export interface FindingFilter {
  class?: FindingClass;
  service?: string;
  key?: string;
  sinceUnixMillis?: number;
  untilUnixMillis?: number;
  /** Only this incident's findings. */
  incidentId?: string;
  /** Only this tenant's findings: every tenant in their evidence is this one (a tenant-scoped token). */
  tenant?: string;
}

/** Attempts a finding's excerpt keeps (`Findings.excerpt`): what an incident's detail shows of a key. */
export const EXCERPT_ATTEMPTS = 100;

/** A finding whose `attempts` may be the first of its `attemptsTotal`. */
export interface FindingExcerpt {
  finding: Finding;
  attemptsTotal: number;
}

/** The stored findings, as the API, the key lookup and a restarted detector read them. */
export interface Findings {
  list(filter: FindingFilter, page: Page): PageResult<Finding>;
  /** `list`'s ids only: what to read with `excerpt`, one finding at a time. */
  ids(filter: FindingFilter, page: Page): PageResult<string>;
  /**
   * The finding with its first `EXCERPT_ATTEMPTS` attempts only (in time order), kept beside the
   * whole finding when it is written: a hot key's finding holds thousands of attempts, and reading
   * it whole holds the event loop for a hundred milliseconds or more.
   */
  excerpt(id: string): FindingExcerpt | undefined;
  get(id: string, tenant?: string): Finding | undefined;
  /** An incident's findings, in the order they were first stored. */
  ofIncident(incidentId: string, tenant?: string): Finding[];
  /** A key's findings, in the order they were first stored. */
  ofKey(key: string, tenant?: string): Finding[];
  /** Findings seen since a time: what a restarted detector must know it reported. */
  recent(sinceUnixMillis: number): Finding[];
  /** The latest event time any stored finding reached: the restart point for `recent`. */
  latestUnixMillis(): number | undefined;
}

// A tenant's findings are those whose evidence is that tenant's alone: a key collision (two
// tenants by nature) or any finding of a key two tenants share carries the other's attempts, so
// only unscoped tokens see it (an incident's tenant is that of its findings: incident-table.ts).
export const TENANT_OF_FINDING =
  "(json_array_length(findings.tenants) = 1 AND json_extract(findings.tenants, '$[0]') = ?)";

/** The `findings` table: one row per finding, its `seq` ordering lists (migrations.ts). */
export class FindingTable implements Findings {
  readonly #statements: StatementCache;

  constructor(db: Database) {
    this.#statements = new StatementCache(db);
  }

  /** Deletes the retracted findings and upserts the others; an upsert keeps the row's seq (its place in lists). */
  write(changes: Pick<DetectorChanges, 'findings' | 'retractedFindingIds'>): void {
    const upsert = this.#statements.get(
      `INSERT INTO findings (id, key, class, service, tenants, incident_id, first_seen_ms, last_seen_ms, body, excerpt)
       VALUES (@id, @key, @class, @service, @tenants, @incidentId, @firstSeen, @lastSeen, @body, @excerpt)
       ON CONFLICT (id) DO UPDATE SET class = excluded.class, service = excluded.service, tenants = excluded.tenants,
         incident_id = excluded.incident_id, first_seen_ms = excluded.first_seen_ms,
         last_seen_ms = excluded.last_seen_ms, body = excluded.body, excerpt = excluded.excerpt`,
    );
    const remove = this.#statements.get('DELETE FROM findings WHERE id = ?');
    for (const id of changes.retractedFindingIds) remove.run(id);
    for (const finding of changes.findings) {
      upsert.run({
        id: finding.id,
        key: finding.key,
        class: finding.class,
        service: finding.service,
        tenants: JSON.stringify(finding.tenants),
        incidentId: finding.incidentId,
        firstSeen: finding.firstSeenUnixMillis,
        lastSeen: finding.lastSeenUnixMillis,
        body: JSON.stringify(finding),
        excerpt: JSON.stringify({
          ...finding,
          attempts: finding.attempts.slice(0, EXCERPT_ATTEMPTS),
          attemptsTotal: finding.attempts.length,
        }),
      });
    }
  }

  list(filter: FindingFilter, page: Page): PageResult<Finding> {
    return this.#page(
      filter,
      page,
      'seq, body',
      (row: { seq: number; body: string }) => JSON.parse(row.body) as Finding,
    );
  }

  ids(filter: FindingFilter, page: Page): PageResult<string> {
    return this.#page(filter, page, 'seq, id', (row: { seq: number; id: string }) => row.id);
  }

  excerpt(id: string): FindingExcerpt | undefined {
    const text = this.#statements.get('SELECT excerpt FROM findings WHERE id = ?').pluck().get(id) as
      | string
      | undefined;
    if (text === undefined) return undefined;
    const { attemptsTotal, ...finding } = JSON.parse(text) as Finding & { attemptsTotal: number };
    return { finding, attemptsTotal };
  }

  #page<Row extends { seq: number }, T>(
    filter: FindingFilter,
    page: Page,
    columns: string,
    parse: (row: Row) => T,
  ): PageResult<T> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.class !== undefined) where.push('class = ?') && params.push(filter.class);
    if (filter.service !== undefined) where.push('service = ?') && params.push(filter.service);
    if (filter.key !== undefined) where.push('key = ?') && params.push(filter.key);
    if (filter.sinceUnixMillis !== undefined)
      where.push('last_seen_ms >= ?') && params.push(filter.sinceUnixMillis);
    if (filter.untilUnixMillis !== undefined)
      where.push('first_seen_ms < ?') && params.push(filter.untilUnixMillis);
    if (filter.incidentId !== undefined) where.push('incident_id = ?') && params.push(filter.incidentId);
    if (filter.tenant !== undefined) where.push(TENANT_OF_FINDING) && params.push(filter.tenant);
    return readPage(this.#statements, { table: 'findings', columns, where, params }, page, parse);
  }

  get(id: string, tenant?: string): Finding | undefined {
    const body = this.#statements
      .get(`SELECT body FROM findings WHERE id = ? AND (? IS NULL OR ${TENANT_OF_FINDING})`)
      .pluck()
      .get(id, tenant ?? null, tenant ?? null) as string | undefined;
    return body === undefined ? undefined : (JSON.parse(body) as Finding);
  }

  ofIncident(incidentId: string, tenant?: string): Finding[] {
    return this.#bodies(
      `SELECT body FROM findings WHERE incident_id = ? AND (? IS NULL OR ${TENANT_OF_FINDING}) ORDER BY seq`,
      incidentId,
      tenant ?? null,
      tenant ?? null,
    );
  }

  ofKey(key: string, tenant?: string): Finding[] {
    return this.#bodies(
      `SELECT body FROM findings WHERE key = ? AND (? IS NULL OR ${TENANT_OF_FINDING}) ORDER BY seq`,
      key,
      tenant ?? null,
      tenant ?? null,
    );
  }

  recent(sinceUnixMillis: number): Finding[] {
    return this.#bodies('SELECT body FROM findings WHERE last_seen_ms >= ? ORDER BY seq', sinceUnixMillis);
  }

  latestUnixMillis(): number | undefined {
    return (
      (this.#statements.get('SELECT max(last_seen_ms) FROM findings').pluck().get() as number | null) ??
      undefined
    );
  }

  count(): number {
    return this.#statements.get('SELECT count(*) FROM findings').pluck().get() as number;
  }

  /** Deletes up to `maxRows` findings last seen before the time (retention.ts); how many went. */
  purgeLastSeenBefore(beforeUnixMillis: number, maxRows: number): number {
    return this.#statements
      .get('DELETE FROM findings WHERE seq IN (SELECT seq FROM findings WHERE last_seen_ms < ? LIMIT ?)')
      .run(beforeUnixMillis, maxRows).changes;
  }

  /** Deletes every finding of the incidents (size-bound.ts); how many went. */
  deleteOfIncidents(incidentIds: readonly string[]): number {
    return this.#statements
      .get('DELETE FROM findings WHERE incident_id IN (SELECT value FROM json_each(?))')
      .run(JSON.stringify(incidentIds)).changes;
  }

  #bodies(sql: string, ...params: unknown[]): Finding[] {
    return (
      this.#statements
        .get(sql)
        .pluck()
        .all(...params) as string[]
    ).map((body) => JSON.parse(body) as Finding);
  }
}
