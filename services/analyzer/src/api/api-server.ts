import type { Detector } from '@keyscope/detector';
import { FINDING_CLASSES } from '@keyscope/detector';
import { isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import type { KeyscopeStore } from '@keyscope/store';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { webRoutes } from '../web/web-routes.ts';
import { API_BAD_PARAMETER, API_NOT_FOUND } from './api-errors.ts';
import { type ApiToken, createAuthenticator, type Principal, requireAdmin } from './auth.ts';
import { buildOpenApi, type RouteDoc } from './openapi.ts';
import { presentAttempt, presentFinding, presentIncident } from './present.ts';

export interface ApiDependencies {
  store: KeyscopeStore;
  /** For the scope report (kept in the detector's memory). */
  detector: () => Detector;
  tokens: readonly ApiToken[];
  /** Prometheus exposition text. */
  metrics: () => Promise<string>;
  /** False while the service is starting or draining: /readyz answers 503. */
  ready: () => boolean;
  now?: () => number;
  /** Called after an incident is acknowledged or resolved by hand (alerts follow it). */
  incidentUpdated?: (id: string) => void;
  /** `api.traceLinkTemplate`, for the web page. */
  traceLinkTemplate?: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

const LIMIT = { type: 'integer', minimum: 1, maximum: 500, default: 50 } as const;
const TIME = { type: 'string', format: 'date-time' } as const;
const CLASS = { type: 'string', enum: FINDING_CLASSES } as const;
const ERROR_BODY = {
  type: 'object',
  properties: {
    error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } },
  },
} as const;

/**
 * The HTTP API of DESIGN.md's "Contracts": findings, incidents (ack/resolve), key lookup, scope
 * report, health and metrics, and the OpenAPI document at /docs. Every input is validated by its
 * JSON schema; every refusal is `{ error: { code, message } }` with the code's status.
 */
export function createApiServer(deps: ApiDependencies): FastifyInstance {
  const app = Fastify({
    logger: false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true } },
  });
  const authenticate = createAuthenticator(deps.tokens);
  const now = deps.now ?? Date.now;
  const docs: RouteDoc[] = [];

  app.decorateRequest('principal', null as unknown as Principal);
  app.setErrorHandler((error: Error, _request, reply) => {
    if (isKeyscopeError(error)) {
      return reply.status(error.httpStatus).send({ error: { code: error.code, message: error.message } });
    }
    const validation = (error as { validation?: unknown }).validation;
    if (validation !== undefined) {
      return reply.status(400).send({ error: { code: API_BAD_PARAMETER.code, message: error.message } });
    }
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status < 500)
      return reply.status(status).send({ error: { code: 'KS_API_REQUEST', message: error.message } });
    app.log.error(error);
    return reply.status(500).send({ error: { code: 'KS_API_INTERNAL', message: 'internal error' } });
  });
  app.setNotFoundHandler((request, reply) =>
    reply
      .status(404)
      .send({ error: { code: API_NOT_FOUND.code, message: `no route ${request.method} ${request.url}` } }),
  );

  const guarded = async (request: FastifyRequest) => {
    request.principal = authenticate(request.headers.authorization, request.socket.remoteAddress);
  };
  const tenantOf = (request: FastifyRequest) => request.principal.tenant;

  function route(doc: RouteDoc, handler: (request: FastifyRequest) => unknown): void {
    docs.push(doc);
    app.route({
      method: doc.method,
      url: doc.url,
      schema: {
        ...(doc.query === undefined ? {} : { querystring: doc.query }),
        ...(doc.params === undefined ? {} : { params: doc.params }),
        response: { 400: ERROR_BODY },
      },
      preHandler: doc.public ? undefined : guarded,
      handler: async (request) => handler(request),
    });
  }

  route(
    {
      method: 'GET',
      url: '/api/v1/findings',
      summary: 'Findings, newest first: one per key and class.',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          class: CLASS,
          service: { type: 'string' },
          key: { type: 'string' },
          since: TIME,
          until: TIME,
          limit: LIMIT,
          cursor: { type: 'string' },
        },
      },
    },
    (request) => {
      const q = request.query as Record<string, string | number | undefined>;
      const page = deps.store.listFindings(
        {
          class: q.class as never,
          service: q.service as string | undefined,
          key: q.key as string | undefined,
          sinceUnixMillis: millis(q.since),
          untilUnixMillis: millis(q.until),
          tenant: tenantOf(request),
        },
        { limit: q.limit as number, cursor: q.cursor as string | undefined },
      );
      return { items: page.items.map(presentFinding), nextCursor: page.nextCursor };
    },
  );

  route(
    {
      method: 'GET',
      url: '/api/v1/incidents',
      summary: 'Incidents, newest first; filter status=open for what needs attention.',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          status: { type: 'string', enum: ['open', 'resolved'] },
          class: CLASS,
          service: { type: 'string' },
          since: TIME,
          until: TIME,
          limit: LIMIT,
          cursor: { type: 'string' },
        },
      },
    },
    (request) => {
      const q = request.query as Record<string, string | number | undefined>;
      const page = deps.store.listIncidents(
        {
          status: q.status as 'open' | 'resolved' | undefined,
          class: q.class as never,
          service: q.service as string | undefined,
          sinceUnixMillis: millis(q.since),
          untilUnixMillis: millis(q.until),
          tenant: tenantOf(request),
        },
        { limit: q.limit as number, cursor: q.cursor as string | undefined },
      );
      return { items: page.items.map(presentIncident), nextCursor: page.nextCursor };
    },
  );

  const idParams = {
    type: 'object',
    properties: { id: { type: 'string', minLength: 1, maxLength: 200 } },
    required: ['id'],
  };

  route(
    {
      method: 'GET',
      url: '/api/v1/incidents/:id',
      summary: 'One incident with its findings (the evidence).',
      params: idParams,
    },
    (request) => {
      const { id } = request.params as { id: string };
      const incident = deps.store.getIncident(id, tenantOf(request));
      if (incident === undefined) throw new KeyscopeError(API_NOT_FOUND, `no incident ${id}`);
      return {
        ...presentIncident(incident),
        findings: deps.store.findingsOfIncident(id, tenantOf(request)).map(presentFinding),
        alerts: deps.store.alertsOfIncident(id),
      };
    },
  );

  for (const action of ['ack', 'resolve'] as const) {
    route(
      {
        method: 'POST',
        url: `/api/v1/incidents/:id/${action}`,
        summary:
          action === 'ack'
            ? 'Acknowledge an incident (admin).'
            : 'Resolve an incident by hand (admin); it reopens if it gains keys.',
        params: idParams,
      },
      (request) => {
        requireAdmin(request.principal);
        const { id } = request.params as { id: string };
        if (deps.store.getIncident(id, tenantOf(request)) === undefined) {
          throw new KeyscopeError(API_NOT_FOUND, `no incident ${id}`);
        }
        const who = request.principal.name;
        const incident =
          action === 'ack' ? deps.store.acknowledge(id, who, now()) : deps.store.resolve(id, who, now());
        deps.incidentUpdated?.(id);
        return presentIncident(incident!);
      },
    );
  }

  route(
    {
      method: 'GET',
      url: '/api/v1/keys/:key',
      summary: 'Did key X run twice? Every attempt of one idempotency key and its findings.',
      params: {
        type: 'object',
        properties: { key: { type: 'string', minLength: 1, maxLength: 1024 } },
        required: ['key'],
      },
    },
    (request) => {
      const { key } = request.params as { key: string };
      const attempts = deps.store.attemptsOfKey(key, tenantOf(request));
      const findings = deps.store.findingsOfKey(key, tenantOf(request));
      const executions = attempts.filter((a) => a.kind === 'server' && a.outcome === 'miss').length;
      return {
        key,
        executions,
        ranTwice: findings.some(
          (f) =>
            f.class !== 'scope_violation' && f.class !== 'key_collision' && f.class !== 'suspected_duplicate',
        ),
        attempts: attempts.map(presentAttempt),
        findings: findings.map(presentFinding),
      };
    },
  );

  route(
    {
      method: 'GET',
      url: '/api/v1/scopes',
      summary: 'The scope report: declared key scope vs observed retry scope per tier.',
    },
    (request) => {
      // The report aggregates every tenant's keys, so a tenant-scoped token does not get it.
      if (tenantOf(request) !== undefined) return { items: [], nextCursor: null };
      return { items: deps.detector().scopeReport(), nextCursor: null };
    },
  );

  route({ method: 'GET', url: '/healthz', summary: 'Liveness.', public: true }, () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) =>
    deps.ready() ? { status: 'ready' } : reply.status(503).send({ status: 'not ready' }),
  );
  docs.push({
    method: 'GET',
    url: '/readyz',
    summary: 'Readiness: 503 while starting or draining.',
    public: true,
  });
  app.get('/metrics', async (_request, reply) =>
    reply.type('text/plain; version=0.0.4').send(await deps.metrics()),
  );
  docs.push({ method: 'GET', url: '/metrics', summary: 'Prometheus metrics.', public: true });
  app.get('/docs', async () => buildOpenApi(docs));
  app.register(webRoutes, { authenticate, traceLinkTemplate: deps.traceLinkTemplate ?? '' });
  return app;
}

function millis(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Date.parse(String(value));
  if (Number.isNaN(parsed))
    throw new KeyscopeError(API_BAD_PARAMETER, `expected an RFC 3339 time, received ${value}`);
  return parsed;
}
