import { ROUTING_EVENT_TYPES, type RoutingEventType } from '@keyscope/detector';
import type { KeyscopeStore, StoredRoutingEvent } from '@keyscope/store';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDoc } from './openapi.ts';
import { presentRoutingEvent } from './present.ts';

/** How api-server.ts registers a route: validated by `doc`'s schemas, and documented by it. */
export type RouteRegistrar = (
  doc: RouteDoc,
  handler: (request: FastifyRequest, reply: FastifyReply) => unknown,
) => void;

/** The parts every paged list of the API shares, as api-server.ts declares them. */
export interface ListParameters {
  limit: object;
  cursor: object;
  time: object;
  defaultLimit: number;
  /** An RFC 3339 query value in Unix milliseconds; refuses anything else (KS_API_BAD_PARAMETER). */
  millis(value: string | number | undefined): number | undefined;
}

export interface RoutingEventRouteDependencies {
  store: KeyscopeStore;
  /** The request's principal's tenant; undefined for a token without one. */
  tenantOf(request: FastifyRequest): string | undefined;
  list: ListParameters;
}

/**
 * `GET /api/v1/routing-events`: the routing events keyscope inferred (docs/design.md, "Routing
 * events"), newest first, each with the incidents grouped under it, so that whether keyscope saw
 * a failover or a brownout is answered whether or not anything ran twice during it. A tenant
 * token sees the events of the services where it has a finding of its own, and of the incidents
 * citing them those it sees (routing-event-table.ts, tenant-view.ts).
 */
export function routingEventRoutes(route: RouteRegistrar, deps: RoutingEventRouteDependencies): void {
  const { list } = deps;
  route(
    {
      method: 'GET',
      url: '/api/v1/routing-events',
      summary:
        'Routing events keyscope inferred (node down, failovers, error and latency spikes), newest first, with the incidents that cite each; since and until select events whose window overlaps them.',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          type: { type: 'string', enum: ROUTING_EVENT_TYPES },
          service: { type: 'string' },
          since: list.time,
          until: list.time,
          limit: list.limit,
          cursor: list.cursor,
        },
      },
    },
    (request) => {
      const q = request.query as Record<string, string | number | undefined>;
      const page = deps.store.routingEvents.list(
        {
          type: q.type as RoutingEventType | undefined,
          service: q.service as string | undefined,
          sinceUnixMillis: list.millis(q.since),
          untilUnixMillis: list.millis(q.until),
          tenant: deps.tenantOf(request),
        },
        {
          limit: (q.limit as number | undefined) ?? list.defaultLimit,
          cursor: q.cursor as string | undefined,
        },
      );
      return { items: page.items.map(presentStoredRoutingEvent), nextCursor: page.nextCursor };
    },
  );
}

export function presentStoredRoutingEvent(stored: StoredRoutingEvent) {
  const { incidentIds, ...event } = stored;
  return { ...presentRoutingEvent(event)!, incidentIds };
}
