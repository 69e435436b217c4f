import { Readable } from 'node:stream';
import type { Finding } from '@keyscope/detector';
import type { PageResult } from '@keyscope/store';
import type { FastifyReply } from 'fastify';
import { EXPORT_CONTENT_TYPES, type ExportFormat, exportChunks } from '../presentation/finding-export.ts';

/** Findings read from the store per page of an export: the JSON list's largest page. */
export const EXPORT_PAGE_FINDINGS = 500;

/**
 * Answers with the export of every page of findings, streamed: each page is read from the store
 * when the connection has taken the previous one's rows, so the file is never whole in memory.
 * `first` is read by the caller before anything is sent, so a bad cursor or an incident the
 * principal may not see is refused with its status; `next` reads the page after a cursor.
 * A store failure later cuts the response short (the chunked body never ends), which a client
 * sees as a failed download rather than a short file.
 */
export function sendExport(
  reply: FastifyReply,
  format: ExportFormat,
  fileName: string,
  first: PageResult<Finding>,
  next: (cursor: string) => PageResult<Finding>,
): FastifyReply {
  function* pages(): Generator<readonly Finding[], void, undefined> {
    let page = first;
    yield page.items;
    while (page.nextCursor !== null) {
      page = next(page.nextCursor);
      yield page.items;
    }
  }
  reply.headers({
    'content-type': EXPORT_CONTENT_TYPES[format],
    'content-disposition': `attachment; filename="${safeFileName(fileName)}.${format}"`,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    vary: 'accept',
  });
  return reply.send(Readable.from(exportChunks(format, pages()), { objectMode: false }));
}

/** A name for Content-Disposition that needs no quoting: ids are `inc_…`, anything else is replaced. */
function safeFileName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}
