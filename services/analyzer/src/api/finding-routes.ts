import { FINDING_CLASSES, type FindingClass } from '@keyscope/detector';
import { KeyscopeError } from '@keyscope/errors';
import type { FastifyInstance } from 'fastify';
import {
  EXPORT_CONTENT_TYPES,
  type ExportFormat,
  RESPONSE_FORMATS,
  type ResponseFormat,
  requestedFormat,
} from '../presentation/finding-export.ts';
import { presentFinding } from '../presentation/present.ts';
import { API_BAD_PARAMETER } from './api-errors.ts';
import { FINDINGS_PAGE_SCHEMA, type JsonSchema } from './api-schemas.ts';
import { EXPORT_PAGE_FINDINGS, sendExport } from './export-reply.ts';
import { CURSOR, DEFAULT_LIMIT, LIMIT, type ListQuery, millis, SINCE, UNTIL } from './list-parameters.ts';
import type { RouteSchema } from './openapi.ts';
import {
  attemptsSerializer,
  REFUSAL_RESPONSES,
  type ResourceRouteOptions,
  tenantOf,
} from './route-context.ts';

export const FINDING_CLASS = {
  type: 'string',
  enum: FINDING_CLASSES,
  description: 'Only findings (or incidents) of this class.',
} as const;

// An export holds every match: it takes no limit or cursor.
export const FORMAT = {
  type: 'string',
  enum: RESPONSE_FORMATS,
  description:
    'json (the default), or one row per execution as csv or ndjson; the Accept header (text/csv, application/x-ndjson) chooses too.',
} as const;

/** The 200 of a route that also exports: `json` as `page`, or every match as csv or ndjson. */
export function exportable(page: JsonSchema): Readonly<Record<string, JsonSchema>> {
  const rows = (format: string): JsonSchema => ({
    type: 'string',
    description: `The reconciliation export as ${format}: one row per execution of every matching finding (\`keyscope analyze --format\` writes the same).`,
  });
  return {
    'application/json': page,
    [mediaType(EXPORT_CONTENT_TYPES.csv)]: rows('CSV with a header line'),
    [mediaType(EXPORT_CONTENT_TYPES.ndjson)]: rows('one JSON object a line'),
  };
}

function mediaType(contentType: string): string {
  return contentType.split(';')[0]!;
}

interface FindingsQuery extends ListQuery {
  class?: FindingClass;
  service?: string;
  key?: string;
  incident?: string;
  format?: ResponseFormat;
}

const FINDINGS: RouteSchema = {
  summary:
    'Findings, newest first: one per key and class, stores and nodes listed up to detector.maxStoresPerFinding (storesTotal, nodesTotal count them all); as csv or ndjson, every match, one row per execution.',
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      class: FINDING_CLASS,
      service: { type: 'string', description: "Only findings of this service's tiers." },
      key: { type: 'string', description: 'Only findings of this idempotency key.' },
      incident: {
        type: 'string',
        maxLength: 200,
        description:
          "Only this incident's findings: where an incident's detail leaves off (its findingsNextCursor).",
      },
      since: SINCE,
      until: UNTIL,
      limit: LIMIT,
      cursor: CURSOR,
      format: FORMAT,
    },
  },
  response: { 200: FINDINGS_PAGE_SCHEMA, ...REFUSAL_RESPONSES },
  produces: exportable(FINDINGS_PAGE_SCHEMA),
};

/** `GET /api/v1/findings`: the findings a principal sees, paged as JSON or exported whole. */
export async function findingRoutes(app: FastifyInstance, options: ResourceRouteOptions): Promise<void> {
  const { store } = options;
  app.addHook('preHandler', options.authenticateReader);

  app.get<{ Querystring: FindingsQuery }>(
    '/api/v1/findings',
    { schema: FINDINGS, serializerCompiler: attemptsSerializer },
    async (request, reply) => {
      const q = request.query;
      const filter = {
        class: q.class,
        service: q.service,
        key: q.key,
        incidentId: q.incident,
        sinceUnixMillis: millis(q.since),
        untilUnixMillis: millis(q.until),
        tenant: tenantOf(request),
      };
      const format = requestedFormat(q.format, request.headers.accept);
      reply.header('vary', 'accept');
      if (format !== 'json') {
        refusePaging(q, format);
        const page = (cursor?: string) =>
          store.findings.list(filter, { limit: EXPORT_PAGE_FINDINGS, cursor });
        return sendExport(reply, format, 'keyscope-findings', page(), page);
      }
      const page = store.findings.list(filter, { limit: q.limit ?? DEFAULT_LIMIT, cursor: q.cursor });
      return { items: page.items.map((finding) => presentFinding(finding)), nextCursor: page.nextCursor };
    },
  );
}

/** An export holds every match, so the JSON list's paging does not apply to it. */
function refusePaging(q: ListQuery, format: ExportFormat): void {
  for (const name of ['limit', 'cursor'] as const) {
    if (q[name] !== undefined) {
      throw new KeyscopeError(
        API_BAD_PARAMETER,
        `${name} pages the JSON list; a ${format} export holds every matching finding, so leave ${name} out`,
      );
    }
  }
}
