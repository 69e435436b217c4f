import type { ScopeReportState, ScopeTierState } from '@keyscope/detector';
import type { Database } from 'better-sqlite3';
import { StatementCache } from './statement-cache.ts';

/**
 * The scope report's aggregates, one row per tier (`ScopeTierState`, the overflow bucket's too):
 * each commit upserts the tiers that changed (`Detector.scopeChanges`), so what a commit writes
 * grows with what it changed, never with how many tiers there are.
 */
export interface ScopeTiers {
  /** Upserts each row by its `tier`; runs inside the caller's transaction. */
  save(rows: ScopeReportState): void;
  /** Every row saved, in order of tier name. */
  load(): ScopeReportState;
}

/** The `scope_tiers` table (migrations.ts): a tier's name and its row as JSON. */
export class ScopeTierTable implements ScopeTiers {
  readonly #statements: StatementCache;

  constructor(db: Database) {
    this.#statements = new StatementCache(db);
  }

  save(rows: ScopeReportState): void {
    if (rows.length === 0) return;
    const upsert = this.#statements.get(
      'INSERT INTO scope_tiers (tier, body) VALUES (?, ?) ON CONFLICT (tier) DO UPDATE SET body = excluded.body',
    );
    for (const row of rows) upsert.run(row.tier, JSON.stringify(row));
  }

  load(): ScopeReportState {
    const bodies = this.#statements
      .get('SELECT body FROM scope_tiers ORDER BY tier')
      .pluck()
      .all() as string[];
    return bodies.map((body) => JSON.parse(body) as ScopeTierState);
  }
}
