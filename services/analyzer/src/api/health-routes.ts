import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type Principal, requireMetricsReader } from '../auth/auth.ts';
import { HEALTH_SCHEMA, NOT_READY_SCHEMA, READY_SCHEMA } from './api-schemas.ts';
import type { RouteSchema } from './openapi.ts';
import { REFUSAL_RESPONSES } from './route-context.ts';

export interface HealthRouteOptions {
  /** False while the service is starting or draining, or cannot write its database: /readyz answers 503. */
  ready: () => boolean;
  /** Why `ready` is false, for /readyz's body. */
  notReadyReason?: () => string | undefined;
  /** Prometheus exposition text. */
  metrics: () => Promise<string>;
  /** The request's principal, or a refusal (auth.ts): any token may scrape, as `requireMetricsReader` decides. */
  authenticate: (request: FastifyRequest) => Principal;
}

const HEALTHZ: RouteSchema = {
  summary: 'Liveness.',
  security: [],
  response: { 200: HEALTH_SCHEMA },
};

const READYZ: RouteSchema = {
  summary: 'Readiness: 503 while starting or draining, or while database writes fail; the body says why.',
  security: [],
  response: { 200: READY_SCHEMA, 503: NOT_READY_SCHEMA },
};

const METRICS_TEXT = {
  type: 'string',
  description: 'Prometheus text exposition format 0.0.4; docs/configuration.md lists the metrics.',
} as const;

const METRICS: RouteSchema = {
  summary:
    'Prometheus metrics. With tokens: any token without a tenant (role metrics, read or admin); they name every tenant’s services.',
  response: { 200: METRICS_TEXT, ...REFUSAL_RESPONSES },
  produces: { 'text/plain': METRICS_TEXT },
};

/** /healthz and /readyz for orchestrators, without a token; /metrics for Prometheus. */
export async function healthRoutes(app: FastifyInstance, options: HealthRouteOptions): Promise<void> {
  app.get('/healthz', { schema: HEALTHZ }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', { schema: READYZ }, async (_request, reply) =>
    options.ready()
      ? { status: 'ready' as const }
      : reply
          .status(503)
          .send({ status: 'not ready', reason: options.notReadyReason?.() ?? 'starting or stopping' }),
  );

  app.get(
    '/metrics',
    {
      schema: METRICS,
      preHandler: async (request) => requireMetricsReader(options.authenticate(request)),
    },
    async (_request, reply) => reply.type('text/plain; version=0.0.4').send(await options.metrics()),
  );
}
