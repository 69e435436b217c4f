import type { FindingClass } from '@keyscope/detector';
import { KeyscopeError } from '@keyscope/errors';
import type { FastifyInstance } from 'fastify';
import { requireAdmin } from '../auth/auth.ts';
import { type ResponseFormat, requestedFormat } from '../presentation/finding-export.ts';
import { presentFindingExcerpt, presentIncident } from '../presentation/present.ts';
import { API_FORBIDDEN, API_NOT_FOUND } from './api-errors.ts';
import { INCIDENT_DETAIL_SCHEMA, INCIDENT_SCHEMA, INCIDENTS_PAGE_SCHEMA } from './api-schemas.ts';
import { excerpt } from './error-handler.ts';
import { EXPORT_PAGE_FINDINGS, sendExport } from './export-reply.ts';
import { exportable, FINDING_CLASS, FORMAT } from './finding-routes.ts';
import { CURSOR, DEFAULT_LIMIT, LIMIT, type ListQuery, millis, SINCE, UNTIL } from './list-parameters.ts';
import type { ParametersSchema, RouteSchema } from './openapi.ts';
import {
  attemptsSerializer,
  REFUSAL_RESPONSES,
  type ResourceRouteOptions,
  tenantOf,
} from './route-context.ts';
import { incidentDetail, incidentForList, tenantOwnsIncident } from './tenant-view.ts';

export interface IncidentRouteOptions extends ResourceRouteOptions {
  now: () => number;
  /** Called after an incident is acknowledged or resolved by hand (alerts follow it). */
  incidentUpdated?: (id: string) => void;
  /** `detector.maxStoresPerIncident`, for a tenant's part of an incident. */
  maxStoresPerIncident: number;
}

interface IncidentsQuery extends ListQuery {
  status?: 'open' | 'resolved';
  class?: FindingClass;
  service?: string;
}

interface IncidentParams {
  id: string;
}

const ID_PARAMS: ParametersSchema = {
  type: 'object',
  properties: { id: { type: 'string', minLength: 1, maxLength: 200, description: 'The incident id.' } },
  required: ['id'],
};

const INCIDENTS: RouteSchema = {
  summary:
    'Incidents, newest first; filter status=open for what needs attention. Stores and nodes listed up to detector.maxStoresPerIncident (storesTotal, nodesTotal count them all).',
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      status: { type: 'string', enum: ['open', 'resolved'], description: 'Only incidents in this status.' },
      class: FINDING_CLASS,
      service: { type: 'string', description: "Only incidents of this service's tiers." },
      since: SINCE,
      until: UNTIL,
      limit: LIMIT,
      cursor: CURSOR,
    },
  },
  response: { 200: INCIDENTS_PAGE_SCHEMA, ...REFUSAL_RESPONSES },
};

const INCIDENT: RouteSchema = {
  summary:
    'One incident with its first findings (the evidence, each with its first attempts); the rest from /api/v1/findings?incident=<id>&cursor=<findingsNextCursor>. As csv or ndjson, all its keys, one row per execution.',
  params: ID_PARAMS,
  querystring: { type: 'object', additionalProperties: false, properties: { format: FORMAT } },
  response: { 200: INCIDENT_DETAIL_SCHEMA, ...REFUSAL_RESPONSES },
  produces: exportable(INCIDENT_DETAIL_SCHEMA),
};

const ACTIONS = {
  ack: 'Acknowledge an incident (admin).',
  resolve: 'Resolve an incident by hand (admin); it reopens if it gains keys.',
} as const;

/**
 * Incidents: the list, one incident's detail (or its export), and acknowledging and resolving by
 * hand. A tenant's token sees its own part of each incident (tenant-view.ts).
 */
export async function incidentRoutes(app: FastifyInstance, options: IncidentRouteOptions): Promise<void> {
  const { store, maxStoresPerIncident } = options;
  app.addHook('preHandler', options.authenticateReader);

  app.get<{ Querystring: IncidentsQuery }>('/api/v1/incidents', { schema: INCIDENTS }, async (request) => {
    const q = request.query;
    const tenant = tenantOf(request);
    const page = store.incidents.list(
      {
        status: q.status,
        class: q.class,
        service: q.service,
        sinceUnixMillis: millis(q.since),
        untilUnixMillis: millis(q.until),
        tenant,
      },
      { limit: q.limit ?? DEFAULT_LIMIT, cursor: q.cursor },
    );
    const items: ReturnType<typeof presentIncident>[] = [];
    for (const incident of page.items) {
      const seen = await incidentForList(store, incident, tenant, maxStoresPerIncident);
      if (seen !== undefined) items.push(presentIncident(seen));
    }
    return { items, nextCursor: page.nextCursor };
  });

  app.get<{ Params: IncidentParams; Querystring: { format?: ResponseFormat } }>(
    '/api/v1/incidents/:id',
    { schema: INCIDENT, serializerCompiler: attemptsSerializer },
    async (request, reply) => {
      const { id } = request.params;
      const tenant = tenantOf(request);
      const format = requestedFormat(request.query.format, request.headers.accept);
      reply.header('vary', 'accept');
      const stored = store.incidents.get(id, tenant);
      if (format !== 'json') {
        const page = (cursor?: string) =>
          store.findings.list({ incidentId: id, tenant }, { limit: EXPORT_PAGE_FINDINGS, cursor });
        const first = stored === undefined ? undefined : page();
        // As the JSON answer: a tenant that sees none of the incident's findings does not see it.
        if (first === undefined || (tenant !== undefined && first.items.length === 0)) {
          throw new KeyscopeError(API_NOT_FOUND, `no incident ${excerpt(id)}`);
        }
        return sendExport(reply, format, `keyscope-${id}`, first, page);
      }
      const detail =
        stored === undefined ? undefined : await incidentDetail(store, stored, tenant, maxStoresPerIncident);
      if (detail === undefined) throw new KeyscopeError(API_NOT_FOUND, `no incident ${excerpt(id)}`);
      return {
        ...presentIncident(detail.incident),
        findings: detail.findings.map(presentFindingExcerpt),
        findingsNextCursor: detail.findingsNextCursor,
        // Deliveries page the whole incident through the operator's sinks: not a tenant's to see.
        alerts: tenant === undefined ? store.outbox.deliveriesOf(id) : [],
      };
    },
  );

  for (const action of ['ack', 'resolve'] as const) {
    const schema: RouteSchema = {
      summary: ACTIONS[action],
      params: ID_PARAMS,
      response: { 200: INCIDENT_SCHEMA, ...REFUSAL_RESPONSES },
    };
    app.post<{ Params: IncidentParams }>(`/api/v1/incidents/:id/${action}`, { schema }, async (request) => {
      requireAdmin(request.principal);
      const { id } = request.params;
      const tenant = tenantOf(request);
      // An incident none of whose keys are the tenant's is not found (its existence is not the
      // tenant's to learn); one that also holds other tenants' keys is theirs too: refused.
      if (store.incidents.get(id, tenant) === undefined) {
        throw new KeyscopeError(API_NOT_FOUND, `no incident ${excerpt(id)}`);
      }
      if (tenant !== undefined && !tenantOwnsIncident(store, id, tenant)) {
        throw new KeyscopeError(
          API_FORBIDDEN,
          `incident ${excerpt(id)} also holds keys of other tenants: a token without a tenant may ${action === 'ack' ? 'acknowledge' : 'resolve'} it`,
        );
      }
      const who = request.principal.name;
      const at = options.now();
      const incident =
        action === 'ack' ? store.incidents.acknowledge(id, who, at) : store.incidents.resolve(id, who, at);
      options.incidentUpdated?.(id);
      // Every key in it is the tenant's (or there is no tenant): the whole incident is theirs.
      return presentIncident(incident!);
    });
  }
}
