import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { encodeTraces } from '@keyscope/otlp';
import { span } from '@keyscope/testkit';
import { connectHttp2, grpcPrefix, openRawGrpcCall } from '@keyscope/testkit/wire';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { envOverrides, readConfigFile, resolveServeConfig } from '../../src/config.ts';
import { silentLogger } from '../../src/logger.ts';
import { TRACE_SERVICE_EXPORT_PATH } from '../../src/receivers/otlp-grpc.ts';
import { type RunningService, startServe } from '../../src/serve.ts';

/**
 * Each `otlp.grpc.*` setting, set the way an operator sets it — a config file read by the CLI's
 * loader, or a KEYSCOPE_* variable — and observed on the running service.
 */

const MIB = 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), 'keyscope-settings-grpc-'));
const services: RunningService[] = [];
const openSessions: ClientHttp2Session[] = [];
const clients: grpc.Client[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const session of openSessions.splice(0)) session.destroy();
  for (const client of clients.splice(0)) client.close();
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(services.splice(0).map((service) => service.stop()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Settings {
  /** A YAML config file's text, read as `--config FILE` is. */
  readonly file?: string;
  /** KEYSCOPE_* variables, read as the CLI reads the environment. */
  readonly env?: Record<string, string>;
  /** What the flags would set; by default free ports and a throwaway database. */
  readonly flags?: object;
}

const FREE_PORTS = {
  api: { port: 0 },
  db: { path: ':memory:' },
  otlp: { http: { port: 0 }, grpc: { port: 0 } },
  shutdown: { drainTimeoutMillis: 1_000 },
};

/** `keyscope serve`'s layers, in its order: defaults < config file < KEYSCOPE_* < flags. */
async function serveWith(settings: Settings): Promise<RunningService> {
  let config = resolveServeConfig({});
  if (settings.file !== undefined) {
    const path = join(dir, `config-${services.length}-${Date.now()}.yaml`);
    writeFileSync(path, settings.file);
    config = resolveServeConfig(await readConfigFile(path), config);
  }
  if (settings.env !== undefined) config = resolveServeConfig(envOverrides(settings.env), config);
  config = resolveServeConfig(settings.flags ?? FREE_PORTS, config);
  const service = await startServe(config, { logger: silentLogger });
  services.push(service);
  return service;
}

function exportOverGrpc(
  host: string,
  port: number,
  body: Uint8Array = encodeTraces([span({ id: 1, key: 'k1' })]),
): Promise<grpc.ServiceError | null> {
  const client = new grpc.Client(`${host}:${port}`, grpc.credentials.createInsecure());
  clients.push(client);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      TRACE_SERVICE_EXPORT_PATH,
      (bytes: Uint8Array) => Buffer.from(bytes),
      (bytes: Buffer) => bytes,
      body,
      new grpc.Metadata(),
      { deadline: Date.now() + 5_000 },
      (error) => resolve(error),
    );
  });
}

function rawSession(service: RunningService): ClientHttp2Session {
  const session = connectHttp2(service.addresses.otlpGrpc.port);
  openSessions.push(session);
  return session;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('otlp.grpc settings', () => {
  it('otlp.grpc.host: the receiver listens on that address, and refuses to start on one it cannot bind', async () => {
    const service = await serveWith({ file: 'otlp:\n  grpc:\n    host: 127.0.0.1\n' });
    expect(service.addresses.otlpGrpc.host).toBe('127.0.0.1');
    expect(await exportOverGrpc('127.0.0.1', service.addresses.otlpGrpc.port)).toBeNull();
    // 192.0.2.1 (TEST-NET-1) is no address of this machine.
    await expect(serveWith({ file: 'otlp:\n  grpc:\n    host: 192.0.2.1\n' })).rejects.toThrow(
      /otlp-grpc cannot listen on 192\.0\.2\.1/,
    );
  });

  it('otlp.grpc.port: the receiver answers on that port', async () => {
    const port = await freePort();
    const service = await serveWith({
      env: { KEYSCOPE_OTLP_GRPC_PORT: String(port) },
      flags: { ...FREE_PORTS, otlp: { http: { port: 0 } } },
    });
    expect(service.addresses.otlpGrpc.port).toBe(port);
    expect(await exportOverGrpc('127.0.0.1', port)).toBeNull();
  });

  it('otlp.grpc.maxReceiveMessageBytes: a larger message is refused with RESOURCE_EXHAUSTED', async () => {
    const service = await serveWith({ file: 'otlp:\n  grpc:\n    maxReceiveMessageBytes: 1024\n' });
    const { port } = service.addresses.otlpGrpc;
    const refused = await exportOverGrpc('127.0.0.1', port, new Uint8Array(4096));
    expect(refused?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(service.ingestCounts().grpc.payloadsRejected).toEqual({ message_too_large: 1 });
    expect(await exportOverGrpc('127.0.0.1', port)).toBeNull();
  });

  it('otlp.grpc.maxConcurrentStreams: advertised to each connection in its HTTP/2 SETTINGS', async () => {
    const service = await serveWith({ env: { KEYSCOPE_OTLP_GRPC_MAX_CONCURRENT_STREAMS: '3' } });
    const session = rawSession(service);
    const settings = await new Promise<{ maxConcurrentStreams?: number }>((resolve) =>
      session.once('remoteSettings', resolve),
    );
    expect(settings.maxConcurrentStreams).toBe(3);
  });

  it('otlp.grpc.keepaliveTimeMillis: the server pings each connection this often', async () => {
    const service = await serveWith({ file: 'otlp:\n  grpc:\n    keepaliveTimeMillis: 200\n' });
    const session = rawSession(service);
    const opened = Date.now();
    const pings: number[] = [];
    await new Promise<void>((resolve) => {
      session.on('ping', () => {
        pings.push(Date.now() - opened);
        if (pings.length === 3) resolve();
      });
    });
    expect(pings[0]).toBeGreaterThanOrEqual(150);
    expect(pings[2]).toBeLessThan(3_000);
  });

  it('otlp.grpc.keepaliveTimeoutMillis: a connection that leaves a ping unanswered this long is closed', async () => {
    const service = await serveWith({
      env: {
        KEYSCOPE_OTLP_GRPC_KEEPALIVE_TIME_MILLIS: '100',
        KEYSCOPE_OTLP_GRPC_KEEPALIVE_TIMEOUT_MILLIS: '400',
      },
    });
    // An HTTP/2 peer that says hello (preface and empty SETTINGS), then never answers anything.
    const socket = connect(service.addresses.otlpGrpc.port, '127.0.0.1');
    sockets.push(socket);
    const opened = Date.now();
    socket.write(
      Buffer.concat([
        Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1'),
        Buffer.of(0, 0, 0, 4, 0, 0, 0, 0, 0),
      ]),
    );
    socket.resume();
    await new Promise((resolve) => socket.once('close', resolve));
    const closedAfter = Date.now() - opened;
    expect(closedAfter).toBeGreaterThanOrEqual(100 + 400 - 50);
    expect(closedAfter).toBeLessThan(5_000);
  });

  it('otlp.grpc.messageTimeoutMillis: a call whose message does not arrive in time ends with DEADLINE_EXCEEDED', async () => {
    const service = await serveWith({ env: { KEYSCOPE_OTLP_GRPC_MESSAGE_TIMEOUT_MILLIS: '300' } });
    const began = Date.now();
    const call = openRawGrpcCall(rawSession(service), { path: TRACE_SERVICE_EXPORT_PATH });
    const answer = await call.answer;
    expect(answer.status).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(answer.closedAt - began).toBeGreaterThanOrEqual(300);
    expect(service.ingestCounts().grpc.payloadsRejected).toEqual({ message_timeout: 1 });
  });

  it('otlp.grpc.maxBufferedMessageBytes: a call whose bytes do not fit beside the others still arriving is refused UNAVAILABLE', async () => {
    const service = await serveWith({
      file: 'otlp:\n  grpc:\n    maxBufferedMessageBytes: 1048576\n    messageTimeoutMillis: 1500\n',
    });
    const session = rawSession(service);
    // Each stalls at 768 KiB of a declared 1 MiB: one fits in the bound, two do not.
    const stalled = () =>
      openRawGrpcCall(session, {
        path: TRACE_SERVICE_EXPORT_PATH,
        chunks: [grpcPrefix(MIB), Buffer.alloc(768 * 1024)],
      }).answer;
    const answers = await Promise.all([stalled(), stalled()]);
    expect(answers.map((answer) => answer.status ?? -1).sort((a, b) => a - b)).toEqual([
      grpc.status.DEADLINE_EXCEEDED,
      grpc.status.UNAVAILABLE,
    ]);
    expect(service.ingestCounts().grpc.payloadsRejected).toEqual({ saturated: 1, message_timeout: 1 });
  });
});
