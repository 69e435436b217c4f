import type { Attempt, NodeActivity } from '@keyscope/attempts';
import type { AttemptLog, DetectorChanges } from '@keyscope/detector';
import { KeyscopeError } from '@keyscope/errors';
import type { Database } from 'better-sqlite3';
import { ActivityTable } from './activity-table.ts';
import { AttemptTable, INDEX_BATCH_ROWS } from './attempt-table.ts';
import { type BackgroundCheckpoints, checkpointInBackground } from './background-checkpoints.ts';
import { STORE_UNAVAILABLE } from './errors.ts';
import { type Findings, FindingTable } from './finding-table.ts';
import { type IncidentParts, IncidentPartTable } from './incident-part-table.ts';
import { type Incidents, IncidentTable } from './incident-table.ts';
import type { IntegrityCheck } from './integrity-check.ts';
import { attemptsOfKey } from './key-lookup.ts';
import { openDatabase, openFailure } from './open-database.ts';
import { type Outbox, OutboxTable } from './outbox-table.ts';
import { PlacementTable } from './placement-table.ts';
import { purgeExpired, type RetentionCutoffs } from './retention.ts';
import { type RoutingEvents, RoutingEventTable } from './routing-event-table.ts';
import { type ScopeTiers, ScopeTierTable } from './scope-tier-table.ts';
import { purgeToSize, type SizePurge, usedBytes } from './size-bound.ts';
import { type NamedState, StateTable } from './state-table.ts';
import { isSqliteError, type WriteFailure, WriteFailures } from './write-failures.ts';

export interface StoreOptions {
  /** A file path, or ':memory:' for tests. */
  path: string;
  /** Attempts appended before their keys' index entries are written (attempt-table.ts); default INDEX_BATCH_ROWS. */
  attemptIndexBatchRows?: number;
  /**
   * Checkpoint the WAL on a worker thread instead of inside the commit that crosses the limit
   * (background-checkpoints.ts); for a file database written under load. Default false.
   */
  backgroundCheckpoints?: boolean;
  /** What is read at open to refuse a damaged database (integrity-check.ts); default `quick`. */
  integrityCheck?: IntegrityCheck;
}

/** Each store's connection, for testing.ts and the store's own tests; nothing else reaches it. */
const connections = new WeakMap<KeyscopeStore, Database>();

/**
 * keyscope's SQLite database (better-sqlite3, WAL): one connection, and a table object per table
 * (`findings`, `incidents`, `routingEvents`, `outbox`, `state`, `scopeTiers`, `incidentParts`, and the
 * attempt log), each owning
 * its SQL. Writes happen inside `transaction`, which the pipeline wraps around one OTLP request's
 * worth of work, so that the request is acknowledged only after everything it contributed is
 * committed. With WAL and `synchronous = NORMAL` a committed transaction survives the process
 * being killed at any moment; surviving a power cut as well would cost an fsync per request
 * (`synchronous = FULL`), which keyscope does not do.
 */
export class KeyscopeStore {
  /** Every attempt within the retry horizon (attempt-table.ts); appends must run inside `transaction`. */
  readonly attemptLog: AttemptLog;
  readonly findings: Findings;
  readonly incidents: Incidents;
  readonly routingEvents: RoutingEvents;
  /** Alert deliveries: what packages/alerts calls its `AlertOutbox`. */
  readonly outbox: Outbox;
  readonly state: NamedState;
  /** The scope report's aggregates, tier by tier. */
  readonly scopeTiers: ScopeTiers;
  readonly incidentParts: IncidentParts;
  /** Whether a worker thread checkpoints this database's WAL (`StoreOptions.backgroundCheckpoints`, file databases). */
  readonly checkpointsInBackground: boolean;
  /**
   * Resolves once that thread, when there is one, is up: true when it checkpoints this database,
   * false when the store's commits do (not asked for, in memory, or the thread failed).
   */
  readonly backgroundCheckpointsStarted: Promise<boolean>;
  readonly #db: Database;
  readonly #placements: PlacementTable;
  readonly #attempts: AttemptTable;
  readonly #activity: ActivityTable;
  readonly #findings: FindingTable;
  readonly #incidents: IncidentTable;
  readonly #routingEvents: RoutingEventTable;
  readonly #state: StateTable;
  readonly #outbox: OutboxTable;
  readonly #checkpoints: BackgroundCheckpoints | undefined;
  readonly #writeFailures: WriteFailures;

  constructor(options: StoreOptions) {
    this.checkpointsInBackground = options.backgroundCheckpoints === true && options.path !== ':memory:';
    const db = openDatabase(options.path, {
      integrityCheck: options.integrityCheck ?? 'quick',
      checkpointsInBackground: this.checkpointsInBackground,
    });
    this.#db = db;
    try {
      // These read at open (the attempts left unindexed, the activity log left unfolded): damage
      // met there refuses the database as damage met while opening it does.
      this.#placements = new PlacementTable(db);
      this.#attempts = new AttemptTable(db, {
        indexBatchRows: options.attemptIndexBatchRows ?? INDEX_BATCH_ROWS,
        placements: this.#placements,
      });
      this.#activity = new ActivityTable(db, { placements: this.#placements });
    } catch (error) {
      db.close();
      throw openFailure(options.path, error);
    }
    this.attemptLog = this.#attempts;
    this.findings = this.#findings = new FindingTable(db);
    this.incidents = this.#incidents = new IncidentTable(db);
    this.routingEvents = this.#routingEvents = new RoutingEventTable(db);
    this.outbox = this.#outbox = new OutboxTable(db);
    this.state = this.#state = new StateTable(db);
    this.scopeTiers = new ScopeTierTable(db);
    this.incidentParts = new IncidentPartTable(db);
    const totalChanges = db.prepare('SELECT total_changes()').pluck();
    this.#writeFailures = new WriteFailures(() => totalChanges.get() as number);
    connections.set(this, db);
    this.#checkpoints = this.checkpointsInBackground ? checkpointInBackground(options.path) : undefined;
    this.backgroundCheckpointsStarted = this.#checkpoints?.started ?? Promise.resolve(false);
  }

  /**
   * Runs `work` in one transaction (nested calls become savepoints). The outermost one writes the
   * attempts appended meanwhile as one row, brings their key index up to date when enough attempts
   * wait for it, takes a step of the key filter's rebuild while one is under way, and folds the
   * node activity log into a chunk when that is due. A nested one first
   * writes what the outer one appended, so that if it fails, rolling it back takes only its own
   * attempts with it.
   */
  transaction<T>(work: () => T): T {
    const outermost = !this.#db.inTransaction;
    if (!outermost) this.#attempts.flush();
    let result: T;
    try {
      result = this.#db.transaction(() => {
        const result = work();
        if (outermost) {
          this.#attempts.flush();
          this.#attempts.indexIfDue();
          this.#attempts.stepFilterRebuild();
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
      if (outermost) this.#writeFailures.failed(error);
      if (error instanceof KeyscopeError || !isSqliteError(error)) throw error;
      throw new KeyscopeError(STORE_UNAVAILABLE, `database write failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
    if (outermost) {
      this.#attempts.committed();
      this.#writeFailures.committed();
    }
    return result;
  }

  /**
   * Why writes fail, while they do: set when a transaction fails for a reason of the storage
   * (SQLITE_FULL, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_READONLY, SQLITE_BUSY…), cleared when a
   * later one writes. Undefined while writes succeed.
   */
  get writeFailure(): WriteFailure | undefined {
    return this.#writeFailures.current;
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
        this.#state.save(PROBE_STATE, 'x'.repeat(4096));
        this.#state.delete(PROBE_STATE);
      });
      return true;
    } catch (error) {
      if (error instanceof KeyscopeError) return false;
      throw error;
    }
  }

  /**
   * Writes what the detector changed: findings, then incidents, then routing events (an upsert
   * keeps a row's place in lists).
   */
  applyChanges(changes: DetectorChanges): void {
    this.#findings.write(changes);
    this.#incidents.write(changes);
    this.#routingEvents.write(changes);
  }

  /** How far back the stored attempts reach (the oldest batch's end); null while none is stored. */
  evidenceSinceUnixMillis(): number | null {
    return this.#attempts.oldestBatchEndUnixMillis();
  }

  /** Every attempt recorded for an idempotency key (under any tenant, or only `tenant`'s), in time order. */
  attemptsOfKey(key: string, tenant?: string): Attempt[] {
    return attemptsOfKey(this.#attempts, key, tenant);
  }

  /**
   * Adds node activity to the stored counts (counts add up; order does not matter): one row of the
   * activity log per transaction, whatever the samples (activity-table.ts). The activity log is
   * written and folded by the store's transactions, so it is reached through the store.
   */
  recordActivity(samples: readonly NodeActivity[]): void {
    if (this.#db.inTransaction) this.#activity.record(samples);
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

  /** Purges up to `maxRows` rows past retention per table, in one transaction (retention.ts); how many went. */
  purge(cutoffs: RetentionCutoffs): number {
    return purgeExpired(
      {
        transaction: (work) => this.transaction(work),
        attempts: this.#attempts,
        activity: this.#activity,
        placements: this.#placements,
        findings: this.#findings,
        incidents: this.#incidents,
        outbox: this.#outbox,
        routingEvents: this.#routingEvents,
      },
      cutoffs,
    );
  }

  /**
   * Purges oldest first while the database's pages in use pass `maxBytes`, up to `maxRows` rows
   * per call (size-bound.ts says what goes and what never does, and what `resume` does).
   */
  purgeToSize(options: { maxBytes: number; maxRows: number; resume?: boolean }): SizePurge {
    return purgeToSize(
      this.#db,
      {
        transaction: (work) => this.transaction(work),
        purgeAttempts: (before, maxRows) => this.#attempts.purge(before, maxRows),
        purgeActivity: (before, maxRows) => this.#activity.purge(before, maxRows),
        findings: this.#findings,
        incidents: this.#incidents,
        outbox: this.#outbox,
        routingEvents: this.#routingEvents,
      },
      options,
    );
  }

  /** Bytes of the pages the database uses (free pages left out): what `purgeToSize` bounds. */
  usedBytes(): number {
    return usedBytes(this.#db);
  }

  /** Every row counted: for tests and tools, not for a scrape (`incidents.openCount` is what metrics read). */
  counts(): {
    attempts: number;
    findings: number;
    incidents: number;
    openIncidents: number;
    routingEvents: number;
  } {
    return {
      attempts: this.#attempts.count(),
      findings: this.#findings.count(),
      incidents: this.#incidents.count(),
      openIncidents: this.#incidents.openCount(),
      routingEvents: this.#routingEvents.count(),
    };
  }

  /** Closes the database; the checkpoint thread lets go of it first, so this close is the last. */
  close(): void {
    this.#checkpoints?.unregister();
    if (this.#db.open) this.#db.close();
  }
}

/** The store's connection: for testing.ts and the store's own tests, never exported by index.ts. */
export function connectionOf(store: KeyscopeStore): Database {
  const db = connections.get(store);
  if (db === undefined) throw new Error('not a KeyscopeStore');
  return db;
}

const PROBE_STATE = 'write-probe';
