import type { ActivityTable } from './activity-table.ts';
import type { AttemptTable } from './attempt-table.ts';
import type { FindingTable } from './finding-table.ts';
import type { IncidentTable } from './incident-table.ts';
import type { OutboxTable } from './outbox-table.ts';
import type { PlacementTable } from './placement-table.ts';
import type { RoutingEventTable } from './routing-event-table.ts';

/** The tables time retention purges, and the transaction it runs in. */
export interface RetainedTables {
  /** One transaction around `work` (`KeyscopeStore.transaction`). */
  transaction<T>(work: () => T): T;
  attempts: AttemptTable;
  activity: ActivityTable;
  placements: PlacementTable;
  findings: FindingTable;
  incidents: IncidentTable;
  outbox: OutboxTable;
  routingEvents: RoutingEventTable;
}

export interface RetentionCutoffs {
  /** Attempts and node activity from before this time go: the retry horizon. */
  attemptsBeforeUnixMillis: number;
  /**
   * Findings last seen, resolved incidents last updated, routing events ended and deliveries ended
   * before this time go.
   */
  recordsBeforeUnixMillis: number;
  /** At most this many rows per table. */
  maxRows: number;
}

/**
 * Deletes, in one transaction, up to `maxRows` rows past retention per table and returns how many
 * went; called in small chunks on a timer so a large purge never holds the write lock for long.
 * Open incidents and undelivered alerts are never purged by time (size-bound.ts purges by size).
 */
export function purgeExpired(tables: RetainedTables, cutoffs: RetentionCutoffs): number {
  const {
    attemptsBeforeUnixMillis: attemptsBefore,
    recordsBeforeUnixMillis: recordsBefore,
    maxRows,
  } = cutoffs;
  return tables.transaction(() => {
    let removed = tables.attempts.purge(attemptsBefore, maxRows);
    // Under little traffic the log is folded here rather than by the transactions that fill it.
    tables.activity.fold();
    removed += tables.findings.purgeLastSeenBefore(recordsBefore, maxRows);
    removed += tables.incidents.purgeResolvedBefore(recordsBefore, maxRows);
    removed += tables.routingEvents.purgeEndedBefore(recordsBefore, maxRows);
    removed += tables.activity.purge(attemptsBefore, maxRows);
    // Last: after the fold above and the purges of the rows that refer to placements.
    removed += tables.placements.purge(attemptsBefore, maxRows);
    removed += tables.outbox.purgeDeliveredBefore(recordsBefore, maxRows);
    return removed;
  });
}
