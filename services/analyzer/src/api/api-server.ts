import { withoutRepeatedLogDecisions } from '@keyscope/attempts';
import type { Detector } from '@keyscope/detector';
import { defaultDetectorConfig, executionOutcomes, FINDING_CLASSES } from '@keyscope/detector';
import { KeyscopeError } from '@keyscope/errors';
import { CURSOR_INVALID, type KeyscopeStore } from '@keyscope/store';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { webRoutes } from '../web/web-routes.ts';
import { API_BAD_PARAMETER, API_FORBIDDEN, API_NOT_FOUND } from './api-errors.ts';
import {
  type ApiToken,
  createAuthenticator,
  type Principal,
  requireAdmin,
  requireMetricsReader,
  requireReader,
} from './auth.ts';
import { AuthFailures } from './auth-failures.ts';
import { createCrossSiteGuard } from './cross-site.ts';
import { docsRoutes } from './docs-routes.ts';
import {
  API_BODY_LIMIT_BYTES,
  clientErrorHandler,
  ECHO_MAX_CHARS,
  excerpt,
  frameworkErrors,
  installErrorReplies,
  PATH_PARAMETER_MAX_CHARS,
} from './error-handler.ts';
import { EXPORT_PAGE_FINDINGS, sendExport } from './export-reply.ts';
import { type ExportFormat, RESPONSE_FORMATS, requestedFormat } from './finding-export.ts';
import { acceptJsonBodies } from './json-body.ts';
import type { RouteDoc } from './openapi.ts';
import { presentAttempt, presentFinding, presentFindingExcerpt, presentIncident } from './present.ts';
import { routingEventRoutes } from './routing-event-routes.ts';
import { incidentDetail, incidentForList, tenantOwnsIncident } from './tenant-view.ts';

export interface ApiDependencies {
  store: KeyscopeStore;
  /** For the scope report (kept in the detector's memory). */
  detector: () => Detector;
  tokens: readonly ApiToken[];
  /** Where refused tokens are counted and client addresses' failure budgets kept; a fresh one unless set. */
  authFailures?: AuthFailures;
  /** Prometheus exposition text; with tokens, for tokens without a tenant only. */
  metrics: () => Promise<string>;
  /** False while the service is starting or draining, or cannot write its database: /readyz answers 503. */
  ready: () => boolean;
  /** Why `ready` is false, for /readyz's body. */
  notReadyReason?: () => string | undefined;
  now?: () => number;
  /** Called after an incident is acknowledged or resolved by hand (alerts follow it). */
  incidentUpdated?: (id: string) => void;
  /** `api.traceLinkTemplate`, for the web page. */
  traceLinkTemplate?: string;
  /** `api.host`; without tokens, requests must be addressed to it or to a loopback name (cross-site.ts). */
  listenHost?: string;
  /** `api.publicUrl`; without tokens, its host and origin are allowed too. */
  publicUrl?: string;
  /** How long slow clients may hold a connection; `API_CONNECTION_TIMEOUTS` unless set. */
  timeouts?: Partial<ApiConnectionTimeouts>;
  /** `detector.maxStoresPerIncident`, for a tenant's part of an incident; the detector's default unless set. */
  maxStoresPerIncident?: number;
}

/**
 * The API's requests are small (a query, an empty or tiny JSON body), so a client that has not sent
 * its headers within 10 s, or its whole request within 30 s, is a slow or idle client holding a
 * connection and a file descriptor: it gets 408 and the connection closes. Keep-alive connections
 * idle past 65 s close (longer than the 60 s idle timeout of common load balancers in front).
 */
export interface ApiConnectionTimeouts {
  headersMillis: number;
  requestMillis: number;
  keepAliveMillis: number;
}

export const API_CONNECTION_TIMEOUTS: Readonly<ApiConnectionTimeouts> = Object.freeze({
  headersMillis: 10_000,
  requestMillis: 30_000,
  keepAliveMillis: 65_000,
});

/** fastify's options for `timeouts`, and for requests Node.js cannot parse: the API's and the Kafka roles' HTTP. */
export function connectionOptions(timeouts: Readonly<ApiConnectionTimeouts>) {
  return {
    requestTimeout: timeouts.requestMillis,
    keepAliveTimeout: timeouts.keepAliveMillis,
    http: {
      headersTimeout: timeouts.headersMillis,
      requestTimeout: timeouts.requestMillis,
      // Node checks both timeouts this often (30 s by default, which would let a 10 s one run to 40).
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMillis),
    },
    clientErrorHandler,
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

const DEFAULT_LIMIT = 50;
const LIMIT = {
  type: 'integer',
  minimum: 1,
  maximum: 500,
  description: `Items per page, ${DEFAULT_LIMIT} when absent.`,
} as const;
// An export holds every match: it takes no limit or cursor.
const FORMAT = {
  type: 'string',
  enum: RESPONSE_FORMATS,
  description:
    'json (the default), or one row per execution as csv or ndjson; the Accept header (text/csv, application/x-ndjson) chooses too.',
} as const;
const TIME = { type: 'string', format: 'date-time' } as const;
const CLASS = { type: 'string', enum: FINDING_CLASSES } as const;
// Cursors the API issues are a few dozen characters; a longer one is refused before it is read.
const CURSOR = { type: 'string', maxLength: ECHO_MAX_CHARS } as const;
// The scope report's cursor names a tier (a service and an operation of up to spans.maxNameBytes each).
const SCOPE_CURSOR = { type: 'string', maxLength: 8192 } as const;
const ERROR_BODY = {
  type: 'object',
  properties: {
    error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } },
  },
} as const;

/**
 * The HTTP API of docs/design.md's "Contracts": findings, incidents (ack/resolve), routing events, key lookup, scope
 * report, health and metrics, and the OpenAPI document (docs-routes.ts). Every input is validated by its
 * JSON schema; every refusal, fastify's own included, is `{ error: { code, message } }` with the
 * code's status (error-handler.ts). Without tokens it refuses cross-site use (cross-site.ts); a
 * tenant-scoped token sees and acts on its own tenant's part only (tenant-view.ts).
 */
export function createApiServer(deps: ApiDependencies): FastifyInstance {
  const timeouts = { ...API_CONNECTION_TIMEOUTS, ...deps.timeouts };
  const app = Fastify({
    logger: false,
    ...connectionOptions(timeouts),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true } },
    bodyLimit: API_BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: PATH_PARAMETER_MAX_CHARS },
    frameworkErrors,
  });
  const authenticate = createAuthenticator(deps.tokens, deps.authFailures ?? new AuthFailures());
  const authenticateReader = (authorization: string | undefined, remoteAddress: string | undefined) =>
    requireReader(authenticate(authorization, remoteAddress));
  const now = deps.now ?? Date.now;
  const maxStoresPerIncident = deps.maxStoresPerIncident ?? defaultDetectorConfig().maxStoresPerIncident;
  const docs: RouteDoc[] = [];

  app.decorateRequest('principal', null as unknown as Principal);
  installErrorReplies(app);
  acceptJsonBodies(app);
  if (deps.tokens.length === 0) {
    const refuseCrossSite = createCrossSiteGuard({
      listenHost: deps.listenHost ?? '127.0.0.1',
      publicUrl: deps.publicUrl ?? '',
    });
    app.addHook('onRequest', async (request) => refuseCrossSite(request));
  }

  const guarded = async (request: FastifyRequest) => {
    request.principal = authenticateReader(request.headers.authorization, request.socket.remoteAddress);
  };
  const tenantOf = (request: FastifyRequest) => request.principal.tenant;

  function route(doc: RouteDoc, handler: (request: FastifyRequest, reply: FastifyReply) => unknown): void {
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
      handler: async (request, reply) => handler(request, reply),
    });
  }

  route(
    {
      method: 'GET',
      url: '/api/v1/findings',
      summary:
        'Findings, newest first: one per key and class, stores and nodes listed up to detector.maxStoresPerFinding (storesTotal, nodesTotal count them all); as csv or ndjson, every match, one row per execution.',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: {
          class: CLASS,
          service: { type: 'string' },
          key: { type: 'string' },
          incident: {
            type: 'string',
            maxLength: 200,
            description:
              "Only this incident's findings: where an incident's detail leaves off (its findingsNextCursor).",
          },
          since: TIME,
          until: TIME,
          limit: LIMIT,
          cursor: CURSOR,
          format: FORMAT,
        },
      },
    },
    (request, reply) => {
      const q = request.query as Record<string, string | number | undefined>;
      const filter = {
        class: q.class as never,
        service: q.service as string | undefined,
        key: q.key as string | undefined,
        incidentId: q.incident as string | undefined,
        sinceUnixMillis: millis(q.since),
        untilUnixMillis: millis(q.until),
        tenant: tenantOf(request),
      };
      const format = requestedFormat(q.format as string | undefined, request.headers.accept);
      reply.header('vary', 'accept');
      if (format !== 'json') {
        refusePaging(q, format);
        const page = (cursor?: string) =>
          deps.store.findings.list(filter, { limit: EXPORT_PAGE_FINDINGS, cursor });
        return sendExport(reply, format, 'keyscope-findings', page(), page);
      }
      const page = deps.store.findings.list(filter, {
        limit: (q.limit as number | undefined) ?? DEFAULT_LIMIT,
        cursor: q.cursor as string | undefined,
      });
      return { items: page.items.map((finding) => presentFinding(finding)), nextCursor: page.nextCursor };
    },
  );

  route(
    {
      method: 'GET',
      url: '/api/v1/incidents',
      summary:
        'Incidents, newest first; filter status=open for what needs attention. Stores and nodes listed up to detector.maxStoresPerIncident (storesTotal, nodesTotal count them all).',
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
          cursor: CURSOR,
        },
      },
    },
    async (request) => {
      const q = request.query as Record<string, string | number | undefined>;
      const page = deps.store.incidents.list(
        {
          status: q.status as 'open' | 'resolved' | undefined,
          class: q.class as never,
          service: q.service as string | undefined,
          sinceUnixMillis: millis(q.since),
          untilUnixMillis: millis(q.until),
          tenant: tenantOf(request),
        },
        { limit: (q.limit as number | undefined) ?? DEFAULT_LIMIT, cursor: q.cursor as string | undefined },
      );
      const tenant = tenantOf(request);
      const items: ReturnType<typeof presentIncident>[] = [];
      for (const incident of page.items) {
        const seen = await incidentForList(deps.store, incident, tenant, maxStoresPerIncident);
        if (seen !== undefined) items.push(presentIncident(seen));
      }
      return { items, nextCursor: page.nextCursor };
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
      summary:
        'One incident with its first findings (the evidence, each with its first attempts); the rest from /api/v1/findings?incident=<id>&cursor=<findingsNextCursor>. As csv or ndjson, all its keys, one row per execution.',
      params: idParams,
      query: { type: 'object', additionalProperties: false, properties: { format: FORMAT } },
    },
    async (request, reply) => {
      const { id } = request.params as { id: string };
      const tenant = tenantOf(request);
      const format = requestedFormat((request.query as { format?: string }).format, request.headers.accept);
      reply.header('vary', 'accept');
      const stored = deps.store.incidents.get(id, tenant);
      if (format !== 'json') {
        const page = (cursor?: string) =>
          deps.store.findings.list({ incidentId: id, tenant }, { limit: EXPORT_PAGE_FINDINGS, cursor });
        const first = stored === undefined ? undefined : page();
        // As the JSON answer: a tenant that sees none of the incident's findings does not see it.
        if (first === undefined || (tenant !== undefined && first.items.length === 0)) {
          throw new KeyscopeError(API_NOT_FOUND, `no incident ${excerpt(id)}`);
        }
        return sendExport(reply, format, `keyscope-${id}`, first, page);
      }
      const detail =
        stored === undefined
          ? undefined
          : await incidentDetail(deps.store, stored, tenant, maxStoresPerIncident);
      if (detail === undefined) throw new KeyscopeError(API_NOT_FOUND, `no incident ${excerpt(id)}`);
      return {
        ...presentIncident(detail.incident),
        findings: detail.findings.map(presentFindingExcerpt),
        findingsNextCursor: detail.findingsNextCursor,
        // Deliveries page the whole incident through the operator's sinks: not a tenant's to see.
        alerts: tenant === undefined ? deps.store.outbox.deliveriesOf(id) : [],
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
        const tenant = tenantOf(request);
        // An incident none of whose keys are the tenant's is not found (its existence is not the
        // tenant's to learn); one that also holds other tenants' keys is theirs too: refused.
        if (deps.store.incidents.get(id, tenant) === undefined) {
          throw new KeyscopeError(API_NOT_FOUND, `no incident ${excerpt(id)}`);
        }
        if (tenant !== undefined && !tenantOwnsIncident(deps.store, id, tenant)) {
          throw new KeyscopeError(
            API_FORBIDDEN,
            `incident ${excerpt(id)} also holds keys of other tenants: a token without a tenant may ${action === 'ack' ? 'acknowledge' : 'resolve'} it`,
          );
        }
        const who = request.principal.name;
        const incident =
          action === 'ack'
            ? deps.store.incidents.acknowledge(id, who, now())
            : deps.store.incidents.resolve(id, who, now());
        deps.incidentUpdated?.(id);
        // Every key in it is the tenant's (or there is no tenant): the whole incident is theirs.
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
        properties: { key: { type: 'string', minLength: 1, maxLength: PATH_PARAMETER_MAX_CHARS } },
        required: ['key'],
      },
    },
    (request) => {
      const { key } = request.params as { key: string };
      const attempts = deps.store.attemptsOfKey(key, tenantOf(request));
      const findings = deps.store.findings.ofKey(key, tenantOf(request));
      // An admission whose request failed before its effect committed is no execution; one whose
      // effect is unknown is counted apart, as its finding is a suspected duplicate (docs/design.md).
      // A decision recorded both as a span and as a log record is one execution.
      const outcomeOf = executionOutcomes(attempts);
      let executions = 0;
      let unconfirmedExecutions = 0;
      for (const attempt of withoutRepeatedLogDecisions(attempts)) {
        if (attempt.kind !== 'server' || attempt.outcome !== 'miss') continue;
        const outcome = outcomeOf(attempt);
        if (outcome === 'executed') executions++;
        else if (outcome === 'unknown') unconfirmedExecutions++;
      }
      const since = deps.store.evidenceSinceUnixMillis();
      return {
        key,
        // A key with no attempt is no evidence either way: the page says so, not "no duplicate".
        seen: attempts.length > 0,
        evidenceSince: since === null ? null : new Date(since).toISOString(),
        executions,
        unconfirmedExecutions,
        ranTwice: findings.some(
          (f) =>
            f.class !== 'scope_violation' && f.class !== 'key_collision' && f.class !== 'suspected_duplicate',
        ),
        attempts: attempts.map(presentAttempt),
        findings: findings.map((finding) => presentFinding(finding)),
      };
    },
  );

  route(
    {
      method: 'GET',
      url: '/api/v1/scopes',
      summary:
        'The scope report: declared key scope vs observed retry scope per tier, in order of service then operation; overflow sums the tiers past detector.maxTiers.',
      query: {
        type: 'object',
        additionalProperties: false,
        properties: { limit: LIMIT, cursor: SCOPE_CURSOR },
      },
    },
    (request) => {
      // The report aggregates every tenant's keys, so a tenant-scoped token does not get it.
      if (tenantOf(request) !== undefined) return { items: [], nextCursor: null, overflow: null };
      const q = request.query as { limit?: number; cursor?: string };
      const detector = deps.detector();
      const page = detector.scopeReportPage(
        q.cursor === undefined ? '' : decodeScopeCursor(q.cursor),
        q.limit ?? DEFAULT_LIMIT,
      );
      return {
        items: page.rows,
        nextCursor: page.next === null ? null : encodeScopeCursor(page.next),
        overflow: detector.scopeOverflow(),
      };
    },
  );

  routingEventRoutes(route, {
    store: deps.store,
    tenantOf,
    list: { limit: LIMIT, cursor: CURSOR, time: TIME, defaultLimit: DEFAULT_LIMIT, millis },
  });

  route({ method: 'GET', url: '/healthz', summary: 'Liveness.', public: true }, () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) =>
    deps.ready()
      ? { status: 'ready' }
      : reply
          .status(503)
          .send({ status: 'not ready', reason: deps.notReadyReason?.() ?? 'starting or stopping' }),
  );
  docs.push({
    method: 'GET',
    url: '/readyz',
    summary: 'Readiness: 503 while starting or draining, or while database writes fail; the body says why.',
    public: true,
  });
  app.get(
    '/metrics',
    {
      preHandler: async (request) =>
        requireMetricsReader(authenticate(request.headers.authorization, request.socket.remoteAddress)),
    },
    async (_request, reply) => reply.type('text/plain; version=0.0.4').send(await deps.metrics()),
  );
  docs.push({
    method: 'GET',
    url: '/metrics',
    summary:
      'Prometheus metrics. With tokens: any token without a tenant (role metrics, read or admin); they name every tenant’s services.',
    contentType: 'text/plain',
  });
  app.register(webRoutes, {
    authenticate: authenticateReader,
    traceLinkTemplate: deps.traceLinkTemplate ?? '',
  });
  // Registered by webRoutes; any token may read it, as its own answer says who the token is.
  docs.push({
    method: 'GET',
    url: '/api/v1/ui-config',
    summary: "The web page's settings: who the token is, and where trace ids link to.",
  });
  docsRoutes(app, docs);
  return app;
}

/** An export holds every match, so the JSON list's paging does not apply to it. */
function refusePaging(q: Record<string, string | number | undefined>, format: ExportFormat): void {
  for (const name of ['limit', 'cursor'] as const) {
    if (q[name] !== undefined) {
      throw new KeyscopeError(
        API_BAD_PARAMETER,
        `${name} pages the JSON list; a ${format} export holds every matching finding, so leave ${name} out`,
      );
    }
  }
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

function millis(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Date.parse(String(value));
  if (Number.isNaN(parsed))
    throw new KeyscopeError(
      API_BAD_PARAMETER,
      `expected an RFC 3339 time, received ${excerpt(String(value))}`,
    );
  return parsed;
}
