import type { Attempt, NodeActivity } from '@keyscope/attempts';
import type { AttemptLog, DetectorChanges, Finding, FindingClass, Incident } from '@keyscope/detector';
import { KeyscopeError } from '@keyscope/errors';
import BetterSqlite3, { type Database, type Statement } from 'better-sqlite3';
import { ActivityTable } from './activity-table.ts';
import { AttemptTable } from './attempt-table.ts';
import { type BackgroundCheckpoints, checkpointInBackground } from './background-checkpoints.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { STORE_NEWER_SCHEMA, STORE_UNAVAILABLE } from './errors.ts';
import { checkIntegrity, damagedDatabase, type IntegrityCheck, isDamage } from './integrity-check.ts';
import { migrate } from './migrations.ts';
import { PlacementTable } from './placement-table.ts';
import { purgeToSize, type SizePurge, usedBytes } from './size-bound.ts';

export interface StoreOptions {
  /** A file path, or ':memory:' for tests. */
  path: string;
  /** Attempts appended before their keys' index entries are written (attempt-table.ts); default 20,000. */
  attemptIndexBatchRows?: number;
  /**
   * Checkpoint the WAL on a worker thread instead of inside the commit that crosses the limit
   * (background-checkpoints.ts); for a file database written under load. Default false.
   */
  backgroundCheckpoints?: boolean;
  /** What is read at open to refuse a damaged database (integrity-check.ts); default `quick`. */
  integrityCheck?: IntegrityCheck;
}

/**
 * Why the database's writes fail: the last failure of a transaction for a reason of the storage
 * (disk full, I/O error, damaged file, locked), until a later transaction writes successfully.
 */
export interface WriteFailure {
  /** SQLite's code, e.g. SQLITE_FULL or SQLITE_IOERR_WRITE. */
  readonly code: string;
  readonly message: string;
  /** Transactions failed since the last that wrote. */
  readonly failures: number;
}

/** Pages of WAL after which a commit checkpoints: ~40 MB, or ~256 MB as a bound behind a checkpoint thread. */
const WAL_AUTOCHECKPOINT_PAGES = 10_000;
const WAL_AUTOCHECKPOINT_PAGES_BEHIND_THREAD = 65_536;

export interface FindingFilter {
  class?: FindingClass;
  service?: string;
  key?: string;
  sinceUnixMillis?: number;
  untilUnixMillis?: number;
  /** Only this tenant's findings: every tenant in their evidence is this one (a tenant-scoped token). */
  tenant?: string;
}

export interface IncidentFilter {
  status?: 'open' | 'resolved';
  class?: FindingClass;
  service?: string;
  sinceUnixMillis?: number;
  untilUnixMillis?: number;
  tenant?: string;
}

export interface Page {
  limit: number;
  cursor?: string;
}

export interface PageResult<T> {
  items: T[];
  nextCursor: string | null;
}

/** An incident as the API serves it: the detector's view plus what people did to it. */
export interface StoredIncident extends Incident {
  acknowledged: boolean;
  acknowledgedUnixMillis: number | null;
  acknowledgedBy: string | null;
  resolvedBy: string | null;
}

export interface OutboxEntry {
  id: number;
  sink: string;
  dedupKey: string;
  incidentId: string;
  payload: unknown;
  attempts: number;
}

/**
 * keyscope's SQLite database (better-sqlite3, WAL). Writes happen inside `transaction`, which the
 * pipeline wraps around one OTLP request's worth of work, so that the request is acknowledged only
 * after everything it contributed is committed. With WAL and `synchronous = NORMAL` a committed
 * transaction survives the process being killed at any moment; surviving a power cut as well would
 * cost an fsync per request (`synchronous = FULL`), which keyscope does not do.
 */
export class KeyscopeStore {
  readonly db: Database;
  readonly attemptLog: AttemptLog;
  readonly #attempts: AttemptTable;
  readonly #activity: ActivityTable;
  readonly #placements: PlacementTable;
  readonly #checkpoints: BackgroundCheckpoints | undefined;
  /** Whether a worker thread checkpoints this database's WAL (`StoreOptions.backgroundCheckpoints`, file databases). */
  readonly checkpointsInBackground: boolean;
  /**
   * Resolves once that thread, when there is one, is up: true when it checkpoints this database,
   * false when the store's commits do (not asked for, in memory, or the thread failed).
   */
  readonly backgroundCheckpointsStarted: Promise<boolean>;
  private readonly statements = new Map<string, Statement>();
  #writeFailure: (WriteFailure & { changesAtFailure: number }) | undefined;

  constructor(options: StoreOptions) {
    this.checkpointsInBackground = options.backgroundCheckpoints === true && options.path !== ':memory:';
    let db: Database | undefined;
    try {
      db = new BetterSqlite3(options.path);
      this.db = db;
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.pragma('busy_timeout = 5000');
      // Attempts arrive in idempotency-key order, i.e. at random places in the key index: a
      // larger page cache keeps those pages hot, and checkpointing every ~40 MB of WAL instead of
      // every 4 MB writes each page back once instead of many times (measured: commits ~2x
      // cheaper). journal_size_limit trims the WAL file after a checkpoint.
      this.db.pragma('cache_size = -65536');
      this.db.pragma(
        `wal_autocheckpoint = ${this.checkpointsInBackground ? WAL_AUTOCHECKPOINT_PAGES_BEHIND_THREAD : WAL_AUTOCHECKPOINT_PAGES}`,
      );
      this.db.pragma('journal_size_limit = 67108864');
      // Before the migrations, which would otherwise write into a damaged file.
      checkIntegrity(this.db, options.integrityCheck ?? 'quick', options.path);
      const known = migrate(this.db);
      const version = this.db.pragma('user_version', { simple: true }) as number;
      if (version > known) {
        throw new KeyscopeError(
          STORE_NEWER_SCHEMA,
          `database ${options.path} has schema version ${version}, this keyscope knows up to ${known}`,
        );
      }
      this.#placements = new PlacementTable(this.db);
      this.#attempts = new AttemptTable(this.db, {
        indexBatchRows: options.attemptIndexBatchRows ?? 20_000,
        placements: this.#placements,
      });
      this.attemptLog = this.#attempts;
      this.#activity = new ActivityTable(this.db, { placements: this.#placements });
    } catch (error) {
      if (db?.open) db.close();
      if (error instanceof KeyscopeError || !isSqliteError(error)) throw error;
      // Damage met while opening (the header is not SQLite's, or a page read on the way is broken).
      if (isDamage(error)) throw damagedDatabase(options.path, (error as Error).message, error);
      throw new KeyscopeError(
        STORE_UNAVAILABLE,
        `cannot open database ${options.path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    this.#checkpoints = this.checkpointsInBackground ? checkpointInBackground(options.path) : undefined;
    this.backgroundCheckpointsStarted = this.#checkpoints?.started ?? Promise.resolve(false);
  }

  /**
   * Runs `work` in one transaction (nested calls become savepoints). The outermost one writes the
   * attempts appended meanwhile as one row, brings their key index up to date when enough attempts
   * wait for it, and folds the node activity log into a chunk when that is due. A nested one first
   * writes what the outer one appended, so that if it fails, rolling it back takes only its own
   * attempts with it.
   */
  transaction<T>(work: () => T): T {
    const outermost = !this.db.inTransaction;
    if (!outermost) this.#attempts.flush();
    let result: T;
    try {
      result = this.db.transaction(() => {
        const result = work();
        if (outermost) {
          this.#attempts.flush();
          this.#attempts.indexIfDue();
          this.#activity.foldIfDue();
        }
        return result;
      })();
    } catch (error) {
      // Rows appended by what failed are gone; so must be their tail entries (also for a savepoint).
      // Placements first: the other two read what the database kept through them.
      this.#placements.afterRollback();
      this.#attempts.afterRollback();
      this.#activity.afterRollback();
      if (outermost) this.#writeFailed(error);
      if (error instanceof KeyscopeError || !isSqliteError(error)) throw error;
      throw new KeyscopeError(STORE_UNAVAILABLE, `database write failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
    // Cleared by a transaction that wrote, not by one that had nothing to write: that one commits
    // on a full disk too. Read only while failing, so a healthy commit costs nothing more.
    if (
      outermost &&
      this.#writeFailure !== undefined &&
      this.#changes() > this.#writeFailure.changesAtFailure
    ) {
      this.#writeFailure = undefined;
    }
    return result;
  }

  /**
   * Why writes fail, while they do: set when a transaction fails for a reason of the storage
   * (SQLITE_FULL, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_READONLY, SQLITE_BUSY…), cleared when a
   * later one writes. Undefined while writes succeed.
   */
  get writeFailure(): WriteFailure | undefined {
    if (this.#writeFailure === undefined) return undefined;
    const { code, message, failures } = this.#writeFailure;
    return { code, message, failures };
  }

  /**
   * Writes a row of a page's size and deletes it again, in one transaction, to tell whether the
   * storage takes writes once more (true; `writeFailure` is cleared then). For a service whose
   * writes failed and that gets no traffic to try with (a load balancer stops sending it any
   * while its readiness is 503). The row's pages are written to the WAL at commit, so a disk with
   * no room for them fails the probe.
   */
  probeWrite(): boolean {
    try {
      this.transaction(() => {
        this.saveState(PROBE_STATE, 'x'.repeat(4096));
        this.statement('DELETE FROM state WHERE name = ?').run(PROBE_STATE);
      });
      return true;
    } catch (error) {
      if (error instanceof KeyscopeError) return false;
      throw error;
    }
  }

  #writeFailed(error: unknown): void {
    let sqlite: unknown = error;
    while (sqlite instanceof KeyscopeError) sqlite = sqlite.cause;
    const code = isSqliteError(sqlite) ? (sqlite as { code: string }).code : undefined;
    if (code === undefined || !STORAGE_FAILURES.has(code.split('_').slice(0, 2).join('_'))) return;
    this.#writeFailure = {
      code,
      message: (sqlite as Error).message,
      failures: (this.#writeFailure?.failures ?? 0) + 1,
      changesAtFailure: this.#changes(),
    };
  }

  /** Rows changed by this connection since it opened (rolled-back statements included). */
  #changes(): number {
    return this.statement('SELECT total_changes()').pluck().get() as number;
  }

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** Writes what the detector changed: upserts keep a row's seq (and so its place in lists). */
  applyChanges(changes: DetectorChanges): void {
    const upsertFinding = this.statement(
      `INSERT INTO findings (id, key, class, service, tenants, incident_id, first_seen_ms, last_seen_ms, body)
       VALUES (@id, @key, @class, @service, @tenants, @incidentId, @firstSeen, @lastSeen, @body)
       ON CONFLICT (id) DO UPDATE SET class = excluded.class, service = excluded.service, tenants = excluded.tenants,
         incident_id = excluded.incident_id, first_seen_ms = excluded.first_seen_ms,
         last_seen_ms = excluded.last_seen_ms, body = excluded.body`,
    );
    const deleteFinding = this.statement('DELETE FROM findings WHERE id = ?');
    // A manual resolve holds until the incident gains keys; the detector's own status otherwise.
    const upsertIncident = this.statement(
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
    const deleteIncident = this.statement('DELETE FROM incidents WHERE id = ?');
    for (const id of changes.retractedFindingIds) deleteFinding.run(id);
    for (const finding of changes.findings) {
      upsertFinding.run({
        id: finding.id,
        key: finding.key,
        class: finding.class,
        service: finding.service,
        tenants: JSON.stringify(finding.tenants),
        incidentId: finding.incidentId,
        firstSeen: finding.firstSeenUnixMillis,
        lastSeen: finding.lastSeenUnixMillis,
        body: JSON.stringify(finding),
      });
    }
    for (const id of changes.retractedIncidentIds) deleteIncident.run(id);
    for (const incident of changes.incidents) {
      upsertIncident.run({
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

  listFindings(filter: FindingFilter, page: Page): PageResult<Finding> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.class !== undefined) where.push('class = ?') && params.push(filter.class);
    if (filter.service !== undefined) where.push('service = ?') && params.push(filter.service);
    if (filter.key !== undefined) where.push('key = ?') && params.push(filter.key);
    if (filter.sinceUnixMillis !== undefined)
      where.push('last_seen_ms >= ?') && params.push(filter.sinceUnixMillis);
    if (filter.untilUnixMillis !== undefined)
      where.push('first_seen_ms < ?') && params.push(filter.untilUnixMillis);
    if (filter.tenant !== undefined) where.push(TENANT_OF_FINDING) && params.push(filter.tenant);
    return this.page('findings', where, params, page, (body) => JSON.parse(body) as Finding);
  }

  getFinding(id: string, tenant?: string): Finding | undefined {
    const body = this.statement(
      `SELECT body FROM findings WHERE id = ? AND (? IS NULL OR ${TENANT_OF_FINDING})`,
    )
      .pluck()
      .get(id, tenant ?? null, tenant ?? null) as string | undefined;
    return body === undefined ? undefined : (JSON.parse(body) as Finding);
  }

  findingsOfIncident(incidentId: string, tenant?: string): Finding[] {
    return (
      this.statement(
        `SELECT body FROM findings WHERE incident_id = ? AND (? IS NULL OR ${TENANT_OF_FINDING}) ORDER BY seq`,
      )
        .pluck()
        .all(incidentId, tenant ?? null, tenant ?? null) as string[]
    ).map((body) => JSON.parse(body) as Finding);
  }

  findingsOfKey(key: string, tenant?: string): Finding[] {
    return (
      this.statement(
        `SELECT body FROM findings WHERE key = ? AND (? IS NULL OR ${TENANT_OF_FINDING}) ORDER BY seq`,
      )
        .pluck()
        .all(key, tenant ?? null, tenant ?? null) as string[]
    ).map((body) => JSON.parse(body) as Finding);
  }

  /** Findings seen since a time: what a restarted detector must know it reported. */
  recentFindings(sinceUnixMillis: number): Finding[] {
    return (
      this.statement('SELECT body FROM findings WHERE last_seen_ms >= ? ORDER BY seq')
        .pluck()
        .all(sinceUnixMillis) as string[]
    ).map((body) => JSON.parse(body) as Finding);
  }

  /** The latest event time any stored finding reached: the restart point for `recentFindings`. */
  latestFindingUnixMillis(): number | undefined {
    return (
      (this.statement('SELECT max(last_seen_ms) FROM findings').pluck().get() as number | null) ?? undefined
    );
  }

  /** Every attempt recorded for an idempotency key (under any tenant), in time order. */
  attemptsOfKey(key: string, tenant?: string): Attempt[] {
    // The key's own partition, and those of the key under each tenant (key + NUL + tenant).
    const attempts = this.#attempts
      .attemptsWhere(
        'k.partition_key = @key OR (k.partition_key > @key || char(0) AND k.partition_key < @key || char(1))',
        { key },
        (partitionKey) => partitionKey === key || partitionKey.startsWith(`${key}\u0000`),
      )
      .filter((attempt) => tenant === undefined || attempt.tenant === tenant);
    return attempts.sort((a, b) => a.startUnixMillis - b.startUnixMillis || (a.spanId < b.spanId ? -1 : 1));
  }

  listIncidents(filter: IncidentFilter, page: Page): PageResult<StoredIncident> {
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
    return this.page(
      'incidents',
      where,
      params,
      page,
      (body, row) => storedIncident(body, row),
      INCIDENT_COLUMNS,
    );
  }

  getIncident(id: string, tenant?: string): StoredIncident | undefined {
    const row = this.statement(
      `SELECT body, ${INCIDENT_COLUMNS} FROM incidents WHERE id = ? AND (? IS NULL OR ${TENANT_OF_INCIDENT})`,
    ).get(id, tenant ?? null, tenant ?? null) as IncidentRow | undefined;
    return row === undefined ? undefined : storedIncident(row.body, row);
  }

  acknowledge(id: string, by: string, nowUnixMillis: number): StoredIncident | undefined {
    this.statement(
      'UPDATE incidents SET acknowledged_ms = ?, acknowledged_by = ? WHERE id = ? AND acknowledged_ms IS NULL',
    ).run(nowUnixMillis, by, id);
    return this.getIncident(id);
  }

  resolve(id: string, by: string, nowUnixMillis: number): StoredIncident | undefined {
    this.statement(
      "UPDATE incidents SET status = 'resolved', resolved_manually_ms = ?, resolved_by = ? WHERE id = ? AND status = 'open'",
    ).run(nowUnixMillis, by, id);
    return this.getIncident(id);
  }

  /**
   * Adds node activity to the stored counts (counts add up; order does not matter): one row of the
   * activity log per call, whatever the samples (activity-table.ts).
   */
  recordActivity(samples: readonly NodeActivity[]): void {
    if (this.db.inTransaction) this.#activity.record(samples);
    else this.transaction(() => this.#activity.record(samples));
  }

  /** Node activity from the latest stored bucket back `windowMillis`, for a restarted detector. */
  recentActivity(windowMillis: number): NodeActivity[] {
    return this.#activity.recent(windowMillis);
  }

  /** Rows of node activity logged and not yet folded into a chunk; for tests. */
  get activityLogRows(): number {
    return this.#activity.loggedRows;
  }

  saveState(name: string, value: unknown): void {
    this.statement(
      'INSERT INTO state (name, body) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET body = excluded.body',
    ).run(name, JSON.stringify(value));
  }

  loadState<T>(name: string): T | undefined {
    const body = this.statement('SELECT body FROM state WHERE name = ?').pluck().get(name) as
      | string
      | undefined;
    return body === undefined ? undefined : (JSON.parse(body) as T);
  }

  /** Enqueues a delivery unless one with the same (sink, dedup key) exists; true when enqueued. */
  enqueueAlert(entry: {
    sink: string;
    dedupKey: string;
    incidentId: string;
    payload: unknown;
    dueUnixMillis: number;
  }): boolean {
    return (
      this.statement(
        'INSERT OR IGNORE INTO outbox (sink, dedup_key, incident_id, payload, next_attempt_ms) VALUES (?, ?, ?, ?, ?)',
      ).run(entry.sink, entry.dedupKey, entry.incidentId, JSON.stringify(entry.payload), entry.dueUnixMillis)
        .changes === 1
    );
  }

  /** The dedup keys of a sink's deliveries that start with `prefix` (ASCII), from its unique index. */
  alertKeysStartingWith(sink: string, prefix: string): string[] {
    return this.statement('SELECT dedup_key FROM outbox WHERE sink = ? AND dedup_key >= ? AND dedup_key < ?')
      .pluck()
      .all(sink, prefix, `${prefix}\uffff`) as string[];
  }

  dueAlerts(nowUnixMillis: number, limit: number): OutboxEntry[] {
    const rows = this.statement(
      `SELECT id, sink, dedup_key AS dedupKey, incident_id AS incidentId, payload, attempts FROM outbox
       WHERE delivered_ms IS NULL AND next_attempt_ms <= ? ORDER BY next_attempt_ms, id LIMIT ?`,
    ).all(nowUnixMillis, limit) as (Omit<OutboxEntry, 'payload'> & { payload: string })[];
    return rows.map((row) => ({ ...row, payload: JSON.parse(row.payload) }));
  }

  alertDelivered(id: number, nowUnixMillis: number): void {
    this.statement(
      'UPDATE outbox SET delivered_ms = ?, attempts = attempts + 1, last_error = NULL WHERE id = ?',
    ).run(nowUnixMillis, id);
  }

  alertFailed(id: number, error: string, nextAttemptUnixMillis: number): void {
    this.statement(
      'UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_ms = ? WHERE id = ?',
    ).run(error, nextAttemptUnixMillis, id);
  }

  /** Gives up on a delivery the target refused for good (e.g. 400: the payload will never be accepted). */
  alertAbandoned(id: number, error: string, nowUnixMillis: number): void {
    this.statement(
      "UPDATE outbox SET attempts = attempts + 1, last_error = 'abandoned: ' || ?, delivered_ms = ? WHERE id = ?",
    ).run(error, nowUnixMillis, id);
  }

  /** The last deliveries of an incident's alerts, for the API and tests. */
  alertsOfIncident(
    incidentId: string,
  ): { sink: string; dedupKey: string; attempts: number; delivered: boolean; lastError: string | null }[] {
    return (
      this.statement(
        'SELECT sink, dedup_key, attempts, delivered_ms, last_error FROM outbox WHERE incident_id = ? ORDER BY id',
      ).all(incidentId) as {
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

  pendingAlerts(): number {
    return this.statement('SELECT count(*) FROM outbox WHERE delivered_ms IS NULL').pluck().get() as number;
  }

  /**
   * Deletes up to `maxRows` rows past retention per table and returns how many went; called in
   * small chunks on a timer so a large purge never holds the write lock for long.
   */
  purge(options: {
    attemptsBeforeUnixMillis: number;
    recordsBeforeUnixMillis: number;
    maxRows: number;
  }): number {
    return this.transaction(() => {
      let removed = this.#attempts.purge(options.attemptsBeforeUnixMillis, options.maxRows);
      // Under little traffic the log is folded here rather than by the transactions that fill it.
      this.#activity.fold();
      removed += this.statement(
        'DELETE FROM findings WHERE seq IN (SELECT seq FROM findings WHERE last_seen_ms < ? LIMIT ?)',
      ).run(options.recordsBeforeUnixMillis, options.maxRows).changes;
      removed += this.statement(
        "DELETE FROM incidents WHERE seq IN (SELECT seq FROM incidents WHERE last_finding_ms < ? AND status = 'resolved' LIMIT ?)",
      ).run(options.recordsBeforeUnixMillis, options.maxRows).changes;
      removed += this.#activity.purge(options.attemptsBeforeUnixMillis, options.maxRows);
      // Last: after the fold above and the purges of the rows that refer to placements.
      removed += this.#placements.purge(options.attemptsBeforeUnixMillis, options.maxRows);
      removed += this.statement(
        'DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE delivered_ms < ? LIMIT ?)',
      ).run(options.recordsBeforeUnixMillis, options.maxRows).changes;
      return removed;
    });
  }

  /**
   * Purges oldest first while the database's pages in use pass `maxBytes`, up to `maxRows` rows
   * per call (size-bound.ts says what goes and what never does, and what `resume` does).
   */
  purgeToSize(options: { maxBytes: number; maxRows: number; resume?: boolean }): SizePurge {
    return purgeToSize(
      this.db,
      {
        transaction: (work) => this.transaction(work),
        purgeAttempts: (before, maxRows) => this.#attempts.purge(before, maxRows),
        purgeActivity: (before, maxRows) => this.#activity.purge(before, maxRows),
      },
      options,
    );
  }

  /** Bytes of the pages the database uses (free pages left out): what `purgeToSize` bounds. */
  usedBytes(): number {
    return usedBytes(this.db);
  }

  /** Every row counted: for tests and tools, not for a scrape (`openIncidents` is what metrics read). */
  counts(): { attempts: number; findings: number; incidents: number; openIncidents: number } {
    const count = (sql: string) => this.statement(sql).pluck().get() as number;
    return {
      attempts: this.#attempts.count(),
      findings: count('SELECT count(*) FROM findings'),
      incidents: count('SELECT count(*) FROM incidents'),
      openIncidents: this.openIncidents(),
    };
  }

  openIncidents(): number {
    return this.statement("SELECT count(*) FROM incidents WHERE status = 'open'").pluck().get() as number;
  }

  /** Closes the database; the checkpoint thread lets go of it first, so this close is the last. */
  close(): void {
    this.#checkpoints?.unregister();
    if (this.db.open) this.db.close();
  }

  private page<T>(
    table: 'findings' | 'incidents',
    where: string[],
    params: unknown[],
    page: Page,
    parse: (body: string, row: IncidentRow) => T,
    extraColumns = '',
  ): PageResult<T> {
    if (page.cursor !== undefined) {
      where.push('seq < ?');
      params.push(decodeCursor(page.cursor));
    }
    const columns = extraColumns === '' ? 'seq, body' : `seq, body, ${extraColumns}`;
    const sql = `SELECT ${columns} FROM ${table}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
    const rows = this.statement(sql).all(...params, page.limit + 1) as (IncidentRow & { seq: number })[];
    const more = rows.length > page.limit;
    const items = rows.slice(0, page.limit);
    return {
      items: items.map((row) => parse(row.body, row)),
      nextCursor: more ? encodeCursor(items[items.length - 1]!.seq) : null,
    };
  }
}

// A tenant's findings are those whose evidence is that tenant's alone: a key collision (two
// tenants by nature) or any finding of a key two tenants share carries the other's attempts, so
// only unscoped tokens see it. A tenant sees an incident that holds at least one of its findings.
const TENANT_OF_FINDING =
  "(json_array_length(findings.tenants) = 1 AND json_extract(findings.tenants, '$[0]') = ?)";
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

function storedIncident(body: string, row: IncidentRow): StoredIncident {
  const incident = JSON.parse(body) as Incident;
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

const PROBE_STATE = 'write-probe';

/** SQLite's primary codes for a write refused by the storage rather than by the statement. */
const STORAGE_FAILURES: ReadonlySet<string> = new Set([
  'SQLITE_FULL',
  'SQLITE_IOERR',
  'SQLITE_CORRUPT',
  'SQLITE_NOTADB',
  'SQLITE_READONLY',
  'SQLITE_CANTOPEN',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);

function isSqliteError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE');
}
