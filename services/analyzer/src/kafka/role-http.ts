import Fastify, { type FastifyInstance } from 'fastify';
import { API_CONNECTION_TIMEOUTS, connectionOptions } from '../api/api-server.ts';
import { installErrorReplies } from '../api/error-handler.ts';
import { createAuthenticator, requireMetricsReader } from '../auth/auth.ts';
import type { AuthFailures } from '../auth/auth-failures.ts';
import type { ServeConfig } from '../config.ts';
import { formatHostPort, type ListenAddress } from '../listen-address.ts';
import type { Logger } from '../logger.ts';

/**
 * What a process without the API (the ingest and detect roles) still answers on `api.port`:
 * /healthz, /readyz and /metrics, for its orchestrator and Prometheus. It serves no data. /metrics
 * takes the API's tokens as the API does (any token without a tenant; loopback only without
 * tokens), with the same failure budget per client address and the same connection timeouts.
 */
export async function startRoleHttp(
  config: ServeConfig,
  dependencies: {
    logger: Logger;
    ready: () => boolean;
    metrics: () => Promise<string>;
    authFailures: AuthFailures;
  },
): Promise<{ address: ListenAddress; close: () => Promise<void> }> {
  const app: FastifyInstance = Fastify({ logger: false, ...connectionOptions(API_CONNECTION_TIMEOUTS) });
  installErrorReplies(app);
  const authenticate = createAuthenticator(config.api.tokens, dependencies.authFailures);
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) =>
    dependencies.ready() ? { status: 'ready' } : reply.status(503).send({ status: 'not ready' }),
  );
  app.get(
    '/metrics',
    {
      preHandler: async (request) =>
        requireMetricsReader(authenticate(request.headers.authorization, request.socket.remoteAddress)),
    },
    async (_request, reply) => reply.type('text/plain; version=0.0.4').send(await dependencies.metrics()),
  );
  await app.listen({ host: config.api.host, port: config.api.port });
  const bound = app.server.address() as { port: number };
  const address = { host: config.api.host, port: bound.port };
  dependencies.logger.info(`api listening on http://${formatHostPort(address)}`);
  return { address, close: () => app.close() };
}
