import { decodeCursor, encodeCursor } from './cursor.ts';
import type { StatementCache } from './statement-cache.ts';

export interface Page {
  limit: number;
  cursor?: string;
}

export interface PageResult<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * One page of a table's rows, newest `seq` first, matching every condition of `where`; the
 * cursor is the `seq` of the page's last row, so rows inserted meanwhile never shift a page.
 */
export function readPage<Row extends { seq: number }, T>(
  statements: StatementCache,
  query: {
    table: 'findings' | 'incidents' | 'routing_events';
    columns: string;
    where: string[];
    params: unknown[];
  },
  page: Page,
  parse: (row: Row) => T,
): PageResult<T> {
  const where = [...query.where];
  const params = [...query.params];
  if (page.cursor !== undefined) {
    where.push('seq < ?');
    params.push(decodeCursor(page.cursor));
  }
  const sql = `SELECT ${query.columns} FROM ${query.table}${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
  const rows = statements.get(sql).all(...params, page.limit + 1) as Row[];
  const more = rows.length > page.limit;
  const items = rows.slice(0, page.limit);
  return {
    items: items.map(parse),
    nextCursor: more ? encodeCursor(items[items.length - 1]!.seq) : null,
  };
}
