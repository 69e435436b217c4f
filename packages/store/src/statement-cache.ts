import type { Database, Statement } from 'better-sqlite3';

/** Each SQL text prepared once per connection, on first use. */
export class StatementCache {
  readonly #db: Database;
  readonly #statements = new Map<string, Statement>();

  constructor(db: Database) {
    this.#db = db;
  }

  get(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}
