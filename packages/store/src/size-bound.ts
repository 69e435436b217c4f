import type { Database } from 'better-sqlite3';
import type { FindingTable } from './finding-table.ts';
import type { IncidentTable } from './incident-table.ts';
import type { OutboxTable } from './outbox-table.ts';
import type { RoutingEventTable } from './routing-event-table.ts';

/**
 * The database's size bound: what is purged, and in which order, when the pages in use
 * (`usedBytes`) pass `maxBytes`. Time-based retention keeps attempts for the retry horizon and
 * records for days whatever the traffic; this is what keeps a spike from filling the disk.
 *
 * Once over the bound, rows go oldest first, in three steps, until the database is back under
 * `TARGET_FRACTION` of it (so that it is not purged again by the next few commits):
 *
 * 1. Attempts older than the newest `ATTEMPTS_KEPT_MILLIS` of them: a spike is mostly attempts,
 *    and an old attempt only serves to recognise a retry that arrives later than that; the
 *    detector's effective retry horizon shrinks to what is kept. Node activity as old goes too.
 * 2. Resolved incidents with their findings and their delivered alerts, oldest last finding first:
 *    history already reported. An incident purged here that gains keys later comes back with the
 *    new findings only. Then routing events no stored incident cites, earliest ended first.
 * 3. The remaining attempts and node activity, oldest first, but for the newest batch.
 *
 * Never purged by size: open incidents and their findings, alerts not yet delivered, delivered
 * alerts of incidents still stored (they are what keeps an incident from being paged twice), and
 * the detector's saved state. If those alone pass the bound, the database stays over it
 * (`SizePurge.exhausted`) and writes go on until the disk itself refuses them, which readiness
 * reports.
 *
 * Freed pages are counted at once, but an index entry deleted from a page that keeps others frees
 * no page, only room that later entries fill: the key index of the purged attempts (about a fifth
 * of an attempt's bytes) is still counted as used, so the bound keeps a little less than it allows.
 */
export const TARGET_FRACTION = 0.9;
export const ATTEMPTS_KEPT_MILLIS = 60 * 60 * 1000;
/** Rows per transaction, so that no purge holds the write lock for long. */
const CHUNK_ROWS = 5_000;
/** Oldest batches (or activity chunks) a step's cutoff spans; the chunk's row budget still applies. */
const CHUNK_BATCHES = 32;
/** Resolved incidents per transaction (each with its findings). */
const CHUNK_INCIDENTS = 50;

/** Bytes of the pages the database uses: page_count × page_size, less its free pages (reused first). */
export function usedBytes(db: Database): number {
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pages = db.pragma('page_count', { simple: true }) as number;
  const free = db.pragma('freelist_count', { simple: true }) as number;
  return (pages - free) * pageSize;
}

/** The store's purges that the bound runs. */
export interface SizeBoundTables {
  /** One transaction around `work` (`KeyscopeStore.transaction`). */
  transaction<T>(work: () => T): T;
  /** Attempts in batches that all ended before the time, up to about `maxRows`; never the newest batch. */
  purgeAttempts(beforeUnixMillis: number, maxRows: number): number;
  /** Node activity chunks whose buckets all start before the time, up to `maxRows`. */
  purgeActivity(beforeUnixMillis: number, maxRows: number): number;
  findings: Pick<FindingTable, 'deleteOfIncidents'>;
  incidents: Pick<IncidentTable, 'oldestResolvedIds' | 'delete'>;
  outbox: Pick<OutboxTable, 'deleteDeliveredOfIncidents'>;
  routingEvents: Pick<RoutingEventTable, 'purgeUncitedOldest'>;
}

/** What one `purgeToSize` did. */
export interface SizePurge {
  bytesBefore: number;
  bytesAfter: number;
  attempts: number;
  activity: number;
  incidents: number;
  findings: number;
  alerts: number;
  routingEvents: number;
  /** Still over the bound with nothing left that the bound may purge. */
  exhausted: boolean;
  /** Stopped by `maxRows` above the target: call again with `resume` to go on. */
  more: boolean;
}

/**
 * Purges, oldest first, until the database is under `TARGET_FRACTION` × `maxBytes` or `maxRows`
 * rows went; nothing while it is under `maxBytes`, unless `resume` (a call after one that
 * answered `more`) asks to go on down to the target.
 */
export function purgeToSize(
  db: Database,
  tables: SizeBoundTables,
  options: { maxBytes: number; maxRows: number; resume?: boolean },
): SizePurge {
  const bytes = usedBytes(db);
  const purge: SizePurge = {
    bytesBefore: bytes,
    bytesAfter: bytes,
    attempts: 0,
    activity: 0,
    incidents: 0,
    findings: 0,
    alerts: 0,
    routingEvents: 0,
    exhausted: false,
    more: false,
  };
  const target = Math.floor(options.maxBytes * TARGET_FRACTION);
  if (bytes <= (options.resume === true ? target : options.maxBytes)) return purge;
  let budget = options.maxRows;
  /** Runs `chunk` in transactions until under the target, out of budget, or it removes nothing. */
  const run = (chunk: (maxRows: number) => number): void => {
    while (purge.bytesAfter > target && budget > 0) {
      const removed = tables.transaction(() => chunk(Math.min(budget, CHUNK_ROWS)));
      purge.bytesAfter = usedBytes(db);
      if (removed === 0) return;
      budget -= removed;
    }
  };
  const oldestAttempts = db.prepare('SELECT end_ms FROM attempt_batches ORDER BY end_ms LIMIT 1 OFFSET ?');
  const oldestActivity = db.prepare(
    'SELECT last_bucket_ms FROM activity_chunks ORDER BY last_bucket_ms LIMIT 1 OFFSET ?',
  );
  /** A cutoff past the oldest `CHUNK_BATCHES` rows of `oldest` (all of them when fewer), at most `limit`. */
  const cutoff = (oldest: typeof oldestAttempts, limit: number): number => {
    const last = (oldest.pluck().get(CHUNK_BATCHES - 1) as number | undefined) ?? Number.MAX_VALUE;
    return Math.min(last === Number.MAX_VALUE ? last : last + 1, limit);
  };
  const attemptsAndActivity =
    (keptFromUnixMillis: number) =>
    (maxRows: number): number => {
      const attempts = tables.purgeAttempts(cutoff(oldestAttempts, keptFromUnixMillis), maxRows);
      const activity = tables.purgeActivity(cutoff(oldestActivity, keptFromUnixMillis), maxRows);
      purge.attempts += attempts;
      purge.activity += activity;
      return attempts + activity;
    };

  const newest = db.prepare('SELECT max(end_ms) FROM attempt_batches').pluck().get() as number | null;
  if (newest !== null) run(attemptsAndActivity(newest - ATTEMPTS_KEPT_MILLIS));
  run((maxRows) => purgeResolvedIncidents(tables, purge, Math.min(CHUNK_INCIDENTS, maxRows)));
  run((maxRows) => {
    const removed = tables.routingEvents.purgeUncitedOldest(maxRows);
    purge.routingEvents += removed;
    return removed;
  });
  run(attemptsAndActivity(Number.MAX_VALUE));
  purge.exhausted = purge.bytesAfter > options.maxBytes && budget > 0;
  purge.more = purge.bytesAfter > target && budget <= 0;
  return purge;
}

/** The `limit` resolved incidents with the oldest last finding, with their findings and delivered alerts. */
function purgeResolvedIncidents(tables: SizeBoundTables, purge: SizePurge, limit: number): number {
  const ids = tables.incidents.oldestResolvedIds(limit);
  const findings = tables.findings.deleteOfIncidents(ids);
  const alerts = tables.outbox.deleteDeliveredOfIncidents(ids);
  const incidents = tables.incidents.delete(ids);
  purge.findings += findings;
  purge.alerts += alerts;
  purge.incidents += incidents;
  return findings + alerts + incidents;
}
