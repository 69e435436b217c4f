import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { GrpcCode } from '@keyscope/errors';
import { encodeTraces } from '@keyscope/otlp';
import { span } from '@keyscope/testkit';
import {
  decodeRpcStatus,
  openRawConnection,
  parseResponses,
  type RawConnection,
  rawPost,
} from '@keyscope/testkit/wire';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { TRACE_SERVICE_EXPORT_PATH } from '../src/receivers/otlp-grpc.ts';
import { type RunningService, startServe } from '../src/serve.ts';

/**
 * The embedded service attacked the way a slowloris client does: connections that send a
 * request's headers and one byte of its body, then wait. Everyone else must still be served.
 */
const SLOW_SENDERS = 20;
const BODY_TIMEOUT_MILLIS = 1_500;

const dir = mkdtempSync(join(tmpdir(), 'keyscope-slow-senders-'));
const services: RunningService[] = [];
const connections: RawConnection[] = [];
const clients: grpc.Client[] = [];
afterEach(async () => {
  for (const connection of connections.splice(0)) connection.socket.destroy();
  for (const client of clients.splice(0)) client.close();
  await Promise.all(services.splice(0).map((service) => service.stop()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function startService(): Promise<RunningService> {
  const service = await startServe(
    resolveServeConfig({
      api: { port: 0 },
      db: { path: join(dir, `keyscope-${services.length}.db`) },
      otlp: { http: { port: 0, bodyTimeoutMillis: BODY_TIMEOUT_MILLIS }, grpc: { port: 0 } },
      shutdown: { drainTimeoutMillis: 1_000 },
    }),
    // The fixtures' spans start on 2026-01-01: the service's clock is a minute later.
    { logger: silentLogger, now: () => Date.UTC(2026, 0, 1, 0, 1) },
  );
  services.push(service);
  return service;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5_000) throw new Error(`still waiting for ${what} after 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function exportOverGrpc(service: RunningService): Promise<grpc.ServiceError | null> {
  const client = new grpc.Client(
    `127.0.0.1:${service.addresses.otlpGrpc.port}`,
    grpc.credentials.createInsecure(),
  );
  clients.push(client);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      TRACE_SERVICE_EXPORT_PATH,
      (bytes: Uint8Array) => Buffer.from(bytes),
      (bytes: Buffer) => bytes,
      encodeTraces([span({ id: 3, key: 'k1' })]),
      new grpc.Metadata(),
      { deadline: Date.now() + 5_000 },
      (error) => resolve(error),
    );
  });
}

describe('the embedded service while slow senders hold connections', () => {
  it('serves OTLP/HTTP, OTLP/gRPC and the API, and answers the slow senders 408 after the body timeout', async () => {
    const service = await startService();
    const { otlpHttp, api } = service.addresses;
    const began = Date.now();
    for (let i = 0; i < SLOW_SENDERS; i += 1) {
      const connection = await openRawConnection(otlpHttp.port);
      connections.push(connection);
      connection.socket.write(rawPost('/v1/traces', Buffer.of(0x0a), { contentLength: 100_000 }));
    }
    await until(() => service.ingestCounts().http.payloadsReceived === SLOW_SENDERS, 'the slow requests');

    const exported = await fetch(`http://127.0.0.1:${otlpHttp.port}/v1/traces`, {
      method: 'POST',
      body: encodeTraces([span({ id: 1, key: 'k1' }), span({ id: 2, key: 'k1' })]),
      headers: { 'content-type': 'application/x-protobuf' },
    });
    expect(exported.status).toBe(200);
    await exported.arrayBuffer();

    const askedHealth = Date.now();
    const health = await fetch(`http://127.0.0.1:${api.port}/healthz`);
    expect(health.status).toBe(200);
    expect(Date.now() - askedHealth).toBeLessThan(1_000);

    expect(await exportOverGrpc(service)).toBeNull();
    // All of that happened while every slow sender still held its connection.
    expect(connections.filter((connection) => connection.isClosed())).toEqual([]);

    const answers = await Promise.all(connections.map((connection) => connection.closed));
    expect(Date.now() - began).toBeGreaterThanOrEqual(BODY_TIMEOUT_MILLIS);
    for (const answer of answers) {
      const [response, ...more] = parseResponses(answer);
      expect(more).toEqual([]);
      expect(response?.status).toBe(408);
      expect(response?.headers.connection).toBe('close');
      expect(decodeRpcStatus(response!.body).code).toBe(GrpcCode.INVALID_ARGUMENT);
    }
    const counts = service.ingestCounts();
    expect(counts.http.payloadsRejected).toEqual({ body_timeout: SLOW_SENDERS });
    expect(counts.http.spansAccepted).toBe(2);
    expect(counts.grpc.spansAccepted).toBe(1);
  });
});
