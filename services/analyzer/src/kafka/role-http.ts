import Fastify, { type FastifyInstance } from 'fastify';
import type { ServeConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { formatHostPort, type ListenAddress } from '../receivers/listen-address.ts';

/**
 * What a process without the API (the ingest and detect roles) still answers on `api.port`:
 * /healthz, /readyz and /metrics, for its orchestrator and Prometheus. It serves no data.
 */
export async function startRoleHttp(
  config: ServeConfig,
  dependencies: { logger: Logger; ready: () => boolean; metrics: () => Promise<string> },
): Promise<{ address: ListenAddress; close: () => Promise<void> }> {
  const app: FastifyInstance = Fastify({ logger: false });
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) =>
    dependencies.ready() ? { status: 'ready' } : reply.status(503).send({ status: 'not ready' }),
  );
  app.get('/metrics', async (_request, reply) =>
    reply.type('text/plain; version=0.0.4').send(await dependencies.metrics()),
  );
  await app.listen({ host: config.api.host, port: config.api.port });
  const bound = app.server.address() as { port: number };
  const address = { host: config.api.host, port: bound.port };
  dependencies.logger.info(`api listening on http://${formatHostPort(address)}`);
  return { address, close: () => app.close() };
}
