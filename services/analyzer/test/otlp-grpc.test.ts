import type { ClientHttp2Session } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { type ErrorDefinition, KeyscopeError } from '@keyscope/errors';
import { encodeTraces, type SpanConsumer } from '@keyscope/otlp';
import { BlockingConsumer, RecordingConsumer, span } from '@keyscope/testkit';
import {
  connectHttp2,
  decodeExportResponse,
  grpcPrefix,
  openRawConnection,
  openRawGrpcCall,
  type RawConnection,
  rawPost,
} from '@keyscope/testkit/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { TRACE_SERVICE_EXPORT_PATH } from '../src/receivers/otlp-grpc.ts';
import { type RunningReceivers, startReceivers } from '../src/receivers/start-receivers.ts';

/** grpc-js's number for gzip in `grpc.default_compression_algorithm`. */
const GZIP = 2;

const STORE_BUSY: ErrorDefinition = {
  code: 'KS_TEST_STORE_BUSY',
  httpStatus: 503,
  retryable: true,
  description: 'test',
};
const RATE_LIMITED: ErrorDefinition = {
  code: 'KS_TEST_RATE_LIMITED',
  httpStatus: 429,
  retryable: true,
  description: 'test',
};

const running: RunningReceivers[] = [];
const clients: grpc.Client[] = [];
const connections: RawConnection[] = [];
const openSessions: ClientHttp2Session[] = [];
afterEach(async () => {
  for (const connection of connections.splice(0)) connection.socket.destroy();
  for (const session of openSessions.splice(0)) session.destroy();
  for (const client of clients.splice(0)) client.close();
  await Promise.all(running.splice(0).map((serve) => serve.stop()));
});

async function serveWith(consumer: SpanConsumer, overrides: object = {}) {
  const base = resolveServeConfig({
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    shutdown: { drainTimeoutMillis: 1_000 },
  });
  const serve = await startReceivers(resolveServeConfig(overrides, base), { consumer, logger: silentLogger });
  running.push(serve);
  return serve;
}

interface GrpcAnswer {
  error: grpc.ServiceError | null;
  response: Buffer | undefined;
}

function grpcClient(serve: RunningReceivers, options: { gzip?: boolean } = {}): grpc.Client {
  const client = new grpc.Client(
    `127.0.0.1:${serve.addresses.otlpGrpc.port}`,
    grpc.credentials.createInsecure(),
    options.gzip ? { 'grpc.default_compression_algorithm': GZIP } : {},
  );
  clients.push(client);
  return client;
}

/** A raw grpc-js client: the request bytes go out as they are. */
function exportRaw(
  serve: RunningReceivers,
  body: Uint8Array,
  options: { gzip?: boolean; client?: grpc.Client } = {},
): Promise<GrpcAnswer> {
  const client = options.client ?? grpcClient(serve, options);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      TRACE_SERVICE_EXPORT_PATH,
      (bytes: Uint8Array) => Buffer.from(bytes),
      (bytes: Buffer) => bytes,
      body,
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (error, response) => resolve({ error, response }),
    );
  });
}

function rawSession(serve: RunningReceivers): ClientHttp2Session {
  const session = connectHttp2(serve.addresses.otlpGrpc.port);
  openSessions.push(session);
  return session;
}

const MIB = 1024 * 1024;

const twoSpans = () => encodeTraces([span({ id: 1, key: 'k1' }), span({ id: 2, key: 'k1' })]);

async function expectStillServing(serve: RunningReceivers): Promise<void> {
  const answer = await exportRaw(serve, encodeTraces([span({ id: 99, key: 'k1' })]));
  expect(answer.error).toBeNull();
}

describe('OTLP/gRPC receiver', () => {
  it('hands exported spans to the consumer and answers an empty ExportTraceServiceResponse', async () => {
    const consumer = new RecordingConsumer();
    const serve = await serveWith(consumer);
    const answer = await exportRaw(serve, twoSpans());
    expect(answer.error).toBeNull();
    expect(decodeExportResponse(answer.response!).partialSuccess).toBeUndefined();
    expect(consumer.spans().map((s) => s.spanId)).toEqual(['0000000000000001', '0000000000000002']);
    expect(serve.counters.snapshot().grpc).toMatchObject({
      payloadsReceived: 1,
      payloadsAccepted: 1,
      spansAccepted: 2,
    });
  });

  it('accepts gzip-compressed messages', async () => {
    const consumer = new RecordingConsumer();
    const serve = await serveWith(consumer);
    const answer = await exportRaw(serve, twoSpans(), { gzip: true });
    expect(answer.error).toBeNull();
    expect(consumer.spans()).toHaveLength(2);
  });

  it('reports spans the consumer refused as partial_success', async () => {
    const consumer = new RecordingConsumer();
    consumer.result = { rejectedSpans: 1, errorMessage: 'span 2 has no idempotency key' };
    const serve = await serveWith(consumer);
    const answer = await exportRaw(serve, twoSpans());
    expect(answer.error).toBeNull();
    expect(decodeExportResponse(answer.response!).partialSuccess).toEqual({
      rejectedSpans: 1,
      errorMessage: 'span 2 has no idempotency key',
    });
  });

  it('answers an undecodable payload with INVALID_ARGUMENT and keeps serving', async () => {
    const serve = await serveWith(new RecordingConsumer());
    const answer = await exportRaw(serve, Uint8Array.of(0x0a, 0x64, 0x01));
    expect(answer.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(answer.error?.details).not.toBe('');
    await expectStillServing(serve);
  });

  it('answers UNAVAILABLE while maxInFlightRequests are held, then serves again', async () => {
    const consumer = new BlockingConsumer();
    const serve = await serveWith(consumer, { otlp: { admission: { maxInFlightRequests: 1 } } });
    const held = exportRaw(serve, twoSpans());
    await consumer.whenHolding(1);
    const refused = await exportRaw(serve, twoSpans());
    expect(refused.error?.code).toBe(grpc.status.UNAVAILABLE);
    consumer.release();
    expect((await held).error).toBeNull();
    expect(serve.counters.snapshot().grpc.payloadsRejected).toEqual({ saturated: 1 });
  });

  it('is admitted while OTLP/HTTP requests whose bodies are still arriving fill maxInFlightRequests', async () => {
    const consumer = new RecordingConsumer();
    const serve = await serveWith(consumer, { otlp: { admission: { maxInFlightRequests: 2 } } });
    for (let i = 0; i < 4; i += 1) {
      const connection = await openRawConnection(serve.addresses.otlpHttp.port);
      connections.push(connection);
      connection.socket.write(rawPost('/v1/traces', Buffer.of(0x0a), { contentLength: 100_000 }));
    }
    for (let waited = 0; serve.counters.snapshot().http.payloadsReceived < 4; waited += 10) {
      if (waited > 5_000) throw new Error('the slow requests did not arrive');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await exportRaw(serve, twoSpans())).error).toBeNull();
    expect(consumer.spans()).toHaveLength(2);
  });

  it('lets one connection open at most maxConcurrentStreams calls at once', async () => {
    const consumer = new BlockingConsumer();
    const serve = await serveWith(consumer, { otlp: { grpc: { maxConcurrentStreams: 1 } } });
    const client = grpcClient(serve);
    const first = exportRaw(serve, twoSpans(), { client });
    const second = exportRaw(serve, twoSpans(), { client });
    await consumer.whenHolding(1);
    // The second call waits in the client until the first one's stream has closed.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(consumer.received).toHaveLength(1);
    consumer.release();
    expect((await first).error).toBeNull();
    await consumer.whenHolding(1);
    consumer.release();
    expect((await second).error).toBeNull();
  });

  it.each([
    ['a retryable consumer error', STORE_BUSY],
    ['a retryable consumer error declared 429', RATE_LIMITED],
  ])('answers %s with UNAVAILABLE, which OTLP clients retry', async (_name, definition) => {
    const consumer = new RecordingConsumer();
    consumer.failWith = new KeyscopeError(definition, 'store is busy');
    const serve = await serveWith(consumer);
    const answer = await exportRaw(serve, twoSpans());
    expect(answer.error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(answer.error?.details).toBe('store is busy');
  });

  it('answers an unexpected consumer error with INTERNAL', async () => {
    const consumer = new RecordingConsumer();
    consumer.failWith = new TypeError('bug');
    const serve = await serveWith(consumer);
    const answer = await exportRaw(serve, twoSpans());
    expect(answer.error?.code).toBe(grpc.status.INTERNAL);
  });

  it('refuses a message over maxReceiveMessageBytes with RESOURCE_EXHAUSTED and keeps serving', async () => {
    const consumer = new RecordingConsumer();
    const serve = await serveWith(consumer, { otlp: { grpc: { maxReceiveMessageBytes: 1024 } } });
    const answer = await exportRaw(serve, new Uint8Array(4096));
    expect(answer.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(consumer.payloads).toHaveLength(0);
    await expectStillServing(serve);
  });

  it('refuses a gzip message that inflates past maxReceiveMessageBytes', async () => {
    const consumer = new RecordingConsumer();
    const serve = await serveWith(consumer, { otlp: { grpc: { maxReceiveMessageBytes: 64 * 1024 } } });
    // grpc-js compresses the 16 MiB of zeros to a few KiB on the wire; the server inflates them.
    const answer = await exportRaw(serve, new Uint8Array(16 * 1024 * 1024), { gzip: true });
    expect(answer.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(consumer.payloads).toHaveLength(0);
    await expectStillServing(serve);
  });

  it('holds at most maxBufferedMessageBytes of stalled messages, refusing the rest UNAVAILABLE as their bytes arrive, and still serves', async () => {
    const consumer = new RecordingConsumer();
    const timeoutMillis = 2_000;
    const maxBufferedMessageBytes = 8 * MIB;
    const serve = await serveWith(consumer, {
      otlp: { grpc: { maxBufferedMessageBytes, messageTimeoutMillis: timeoutMillis } },
    });
    // 60 calls on 3 connections, each declaring a 4 MiB message and stalling 64 KiB short of it:
    // 236 MiB if the receiver held them.
    const part = Buffer.alloc(4 * MIB - 64 * 1024);
    const began = Date.now();
    const calls = [];
    for (let c = 0; c < 3; c += 1) {
      const session = rawSession(serve);
      for (let i = 0; i < 20; i += 1) {
        calls.push(
          openRawGrpcCall(session, { path: TRACE_SERVICE_EXPORT_PATH, chunks: [grpcPrefix(4 * MIB), part] }),
        );
      }
    }
    let answered = 0;
    for (const call of calls) void call.answer.then(() => (answered += 1));
    let mostBuffered = 0;
    while (answered < calls.length) {
      mostBuffered = Math.max(mostBuffered, serve.bufferedBytes().grpc);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(mostBuffered).toBeGreaterThan(0);
    expect(mostBuffered).toBeLessThanOrEqual(maxBufferedMessageBytes);
    expect(serve.bufferedBytes().grpc).toBe(0);

    const answers = await Promise.all(calls.map((call) => call.answer));
    const refused = answers.filter((answer) => answer.status === grpc.status.UNAVAILABLE);
    const timedOut = answers.filter((answer) => answer.status === grpc.status.DEADLINE_EXCEEDED);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length + timedOut.length).toBe(calls.length);
    for (const answer of refused) expect(answer.closedAt - began).toBeLessThan(timeoutMillis);
    for (const answer of timedOut) expect(answer.closedAt - began).toBeGreaterThanOrEqual(timeoutMillis);
    expect(serve.counters.snapshot().grpc.payloadsRejected).toEqual({
      saturated: refused.length,
      message_timeout: timedOut.length,
    });
    await expectStillServing(serve);
    expect(consumer.spans()).toHaveLength(1);
  });

  it('ends a call that sends nothing with DEADLINE_EXCEEDED after messageTimeoutMillis', async () => {
    const serve = await serveWith(new RecordingConsumer(), { otlp: { grpc: { messageTimeoutMillis: 300 } } });
    const began = Date.now();
    const call = openRawGrpcCall(rawSession(serve), { path: TRACE_SERVICE_EXPORT_PATH });
    const answer = await call.answer;
    expect(answer.status).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(answer.closedAt - began).toBeGreaterThanOrEqual(300);
    expect(serve.counters.snapshot().grpc.payloadsRejected).toEqual({ message_timeout: 1 });
    await expectStillServing(serve);
  });

  it('ends a stalled call at its own grpc-timeout when that is sooner than messageTimeoutMillis', async () => {
    const serve = await serveWith(new RecordingConsumer());
    const began = Date.now();
    const call = openRawGrpcCall(rawSession(serve), {
      path: TRACE_SERVICE_EXPORT_PATH,
      headers: { 'grpc-timeout': '200m' },
      chunks: [grpcPrefix(100), Buffer.alloc(10)],
    });
    const answer = await call.answer;
    expect(answer.status).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(answer.closedAt - began).toBeLessThan(5_000);
  });

  it('refuses a message whose prefix declares more than maxReceiveMessageBytes before it arrives', async () => {
    const serve = await serveWith(new RecordingConsumer(), {
      otlp: { grpc: { maxReceiveMessageBytes: 1024 } },
    });
    const call = openRawGrpcCall(rawSession(serve), {
      path: TRACE_SERVICE_EXPORT_PATH,
      chunks: [grpcPrefix(64 * MIB)],
    });
    expect((await call.answer).status).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(serve.counters.snapshot().grpc.payloadsRejected).toEqual({ message_too_large: 1 });
  });

  it('answers a call that ends mid-message with INVALID_ARGUMENT', async () => {
    const serve = await serveWith(new RecordingConsumer());
    const call = openRawGrpcCall(rawSession(serve), {
      path: TRACE_SERVICE_EXPORT_PATH,
      chunks: [grpcPrefix(100), Buffer.alloc(10)],
      end: true,
    });
    expect((await call.answer).status).toBe(grpc.status.INVALID_ARGUMENT);
    expect(serve.counters.snapshot().grpc.payloadsRejected).toEqual({ malformed_message: 1 });
  });

  it('answers an unknown grpc-encoding with UNIMPLEMENTED', async () => {
    const serve = await serveWith(new RecordingConsumer());
    const body = twoSpans();
    const call = openRawGrpcCall(rawSession(serve), {
      path: TRACE_SERVICE_EXPORT_PATH,
      headers: { 'grpc-encoding': 'snappy' },
      chunks: [grpcPrefix(body.byteLength, true), body],
      end: true,
    });
    expect((await call.answer).status).toBe(grpc.status.UNIMPLEMENTED);
    expect(serve.counters.snapshot().grpc.payloadsRejected).toEqual({ unsupported_content_encoding: 1 });
  });

  it('answers a method it does not serve with UNIMPLEMENTED', async () => {
    const serve = await serveWith(new RecordingConsumer());
    const call = openRawGrpcCall(rawSession(serve), {
      path: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
      chunks: [grpcPrefix(0)],
      end: true,
    });
    expect((await call.answer).status).toBe(grpc.status.UNIMPLEMENTED);
  });
});
