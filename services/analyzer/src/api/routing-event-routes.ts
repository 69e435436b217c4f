import { ROUTING_EVENT_TYPES, type RoutingEventType } from '@keyscope/detector';
import type { FastifyInstance } from 'fastify';
import { presentStoredRoutingEvent } from '../presentation/present.ts';
import { ROUTING_EVENTS_PAGE_SCHEMA } from './api-schemas.ts';
import { CURSOR, DEFAULT_LIMIT, LIMIT, type ListQuery, millis, SINCE, UNTIL } from './list-parameters.ts';
import type { RouteSchema } from './openapi.ts';
import { REFUSAL_RESPONSES, type ResourceRouteOptions, tenantOf } from './route-context.ts';

interface RoutingEventsQuery extends ListQuery {
  type?: RoutingEventType;
  service?: string;
}

const ROUTING_EVENTS: RouteSchema = {
  summary:
    'Routing events keyscope inferred (node down, failovers, error and latency spikes), newest first, with the incidents that cite each; since and until select events whose window overlaps them.',
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      type: { type: 'string', enum: ROUTING_EVENT_TYPES, description: 'Only events of this type.' },
      service: { type: 'string', description: 'Only events of this service.' },
      since: { ...SINCE, description: 'Only events whose window ends at or after this RFC 3339 time.' },
      until: { ...UNTIL, description: 'Only events whose window starts before this RFC 3339 time.' },
      limit: LIMIT,
      cursor: CURSOR,
    },
  },
  response: { 200: ROUTING_EVENTS_PAGE_SCHEMA, ...REFUSAL_RESPONSES },
};

/**
 * `GET /api/v1/routing-events`: the routing events keyscope inferred (docs/design.md, "Routing
 * events"), newest first, each with the incidents grouped under it, so that whether keyscope saw
 * a failover or a brownout is answered whether or not anything ran twice during it. A tenant
 * token sees the events of the services where it has a finding of its own, and of the incidents
 * citing them those it sees (routing-event-table.ts, tenant-view.ts).
 */
export async function routingEventRoutes(app: FastifyInstance, options: ResourceRouteOptions): Promise<void> {
  const { store } = options;
  app.addHook('preHandler', options.authenticateReader);

  app.get<{ Querystring: RoutingEventsQuery }>(
    '/api/v1/routing-events',
    { schema: ROUTING_EVENTS },
    async (request) => {
      const q = request.query;
      const page = store.routingEvents.list(
        {
          type: q.type,
          service: q.service,
          sinceUnixMillis: millis(q.since),
          untilUnixMillis: millis(q.until),
          tenant: tenantOf(request),
        },
        { limit: q.limit ?? DEFAULT_LIMIT, cursor: q.cursor },
      );
      return { items: page.items.map(presentStoredRoutingEvent), nextCursor: page.nextCursor };
    },
  );
}
