import type { Database } from 'better-sqlite3';
import { StatementCache } from './statement-cache.ts';

/** Small named JSON documents kept with the data: the scope report's counts, Kafka offsets. */
export interface NamedState {
  save(name: string, value: unknown): void;
  /** What was last saved under the name, undefined when nothing was. */
  load<T>(name: string): T | undefined;
}

/** The `state` table: one row per name, its body JSON (migrations.ts). */
export class StateTable implements NamedState {
  readonly #statements: StatementCache;

  constructor(db: Database) {
    this.#statements = new StatementCache(db);
  }

  save(name: string, value: unknown): void {
    this.#statements
      .get(
        'INSERT INTO state (name, body) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET body = excluded.body',
      )
      .run(name, JSON.stringify(value));
  }

  load<T>(name: string): T | undefined {
    const body = this.#statements.get('SELECT body FROM state WHERE name = ?').pluck().get(name) as
      | string
      | undefined;
    return body === undefined ? undefined : (JSON.parse(body) as T);
  }

  delete(name: string): void {
    this.#statements.get('DELETE FROM state WHERE name = ?').run(name);
  }
}
