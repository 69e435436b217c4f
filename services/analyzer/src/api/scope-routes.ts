import type { Detector } from '@keyscope/detector';
import { KeyscopeError } from '@keyscope/errors';
import { CURSOR_INVALID } from '@keyscope/store';
import type { FastifyInstance } from 'fastify';
import { SCOPES_PAGE_SCHEMA } from './api-schemas.ts';
import { excerpt } from './error-handler.ts';
import { DEFAULT_LIMIT, LIMIT } from './list-parameters.ts';
import type { RouteSchema } from './openapi.ts';
import { REFUSAL_RESPONSES, type ResourceRouteOptions, tenantOf } from './route-context.ts';

export interface ScopeRouteOptions extends ResourceRouteOptions {
  /** Where the report comes from: the embedded detector, or the serve role's view. */
  detector: () => Pick<Detector, 'scopeReportPage' | 'scopeOverflow'>;
}

const SCOPES: RouteSchema = {
  summary:
    'The scope report: declared key scope vs observed retry scope per tier, in order of service then operation; overflow sums the tiers past detector.maxTiers.',
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      limit: LIMIT,
      // The report's cursor names a tier (a service and an operation of up to spans.maxNameBytes each).
      cursor: {
        type: 'string',
        maxLength: 8192,
        description: "Where the page starts: the previous page's `nextCursor`.",
      },
    },
  },
  response: { 200: SCOPES_PAGE_SCHEMA, ...REFUSAL_RESPONSES },
};

/** `GET /api/v1/scopes`: the scope report, which aggregates every tenant's keys. */
export async function scopeRoutes(app: FastifyInstance, options: ScopeRouteOptions): Promise<void> {
  app.addHook('preHandler', options.authenticateReader);

  app.get<{ Querystring: { limit?: number; cursor?: string } }>(
    '/api/v1/scopes',
    { schema: SCOPES },
    async (request) => {
      // The report aggregates every tenant's keys, so a tenant-scoped token does not get it.
      if (tenantOf(request) !== undefined) return { items: [], nextCursor: null, overflow: null };
      const { limit, cursor } = request.query;
      const detector = options.detector();
      const page = detector.scopeReportPage(
        cursor === undefined ? '' : decodeScopeCursor(cursor),
        limit ?? DEFAULT_LIMIT,
      );
      return {
        items: page.rows,
        nextCursor: page.next === null ? null : encodeScopeCursor(page.next),
        overflow: detector.scopeOverflow(),
      };
    },
  );
}

/** The scope report pages by tier name (`tierName`), which is stable as tiers are added. */
function encodeScopeCursor(tier: string): string {
  return Buffer.from(`t${tier}`).toString('base64url');
}

function decodeScopeCursor(cursor: string): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith('t') || !text.includes('\u0000')) {
    throw new KeyscopeError(CURSOR_INVALID, `cursor ${excerpt(cursor)} is not a cursor this API issued`);
  }
  return text.slice(1);
}
