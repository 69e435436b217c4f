import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { defaultMapping, mappingDecodeOptions } from '@keyscope/attempts';
import { type ErrorDefinition, GrpcCode, KeyscopeError } from '@keyscope/errors';
import {
  createAttributes,
  encodeLogs,
  encodeLogsJson,
  type LogRecord,
  loggedSpanId,
  type SpanConsumer,
  SpanKind,
} from '@keyscope/otlp';
import { BlockingConsumer, RecordingConsumer } from '@keyscope/testkit';
import { decodeExportResponse, decodeRpcStatus } from '@keyscope/testkit/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { LOGS_SERVICE_EXPORT_PATH } from '../src/receivers/otlp-grpc.ts';
import { type RunningReceivers, startReceivers } from '../src/receivers/start-receivers.ts';

const PROTOBUF = { 'content-type': 'application/x-protobuf' };
const JSON_UTF8 = { 'content-type': 'application/json; charset=utf-8' };
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';

const STORE_BUSY: ErrorDefinition = {
  code: 'KS_TEST_STORE_BUSY',
  httpStatus: 503,
  retryable: true,
  description: 'test',
};

const running: RunningReceivers[] = [];
const clients: grpc.Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(running.splice(0).map((serve) => serve.stop()));
});

async function serveWith(consumer: SpanConsumer, overrides: object = {}, decodeOptions?: object) {
  const base = resolveServeConfig({
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    shutdown: { drainTimeoutMillis: 1_000 },
  });
  const serve = await startReceivers(resolveServeConfig(overrides, base), {
    consumer,
    logger: silentLogger,
    decodeOptions,
  });
  running.push(serve);
  return { serve, url: `http://127.0.0.1:${serve.addresses.otlpHttp.port}/v1/logs` };
}

const resource = { attributes: Object.assign(createAttributes(), { 'service.name': 'payments' }) };
const scope = { name: 'dedup', version: '1' };

/** A log record stating a decision for `key` (or none, with `key` undefined). */
function record(key: string | undefined, fields: Partial<LogRecord> = {}): LogRecord {
  const attributes = createAttributes();
  if (key !== undefined) Object.assign(attributes, { 'idempotency.key': key, 'idempotency.outcome': 'miss' });
  return {
    traceId: '',
    spanId: '',
    timeUnixMillis: Date.UTC(2026, 0, 1),
    observedTimeUnixMillis: 0,
    severityNumber: 9,
    severityText: 'INFO',
    body: 'idempotency decision',
    eventName: '',
    attributes,
    resource,
    scope,
    ...fields,
  };
}

const twoRecords = () => [record('k1', { traceId: TRACE_ID, spanId: SPAN_ID }), record('k2')];

async function post(url: string, body: Uint8Array | string, headers: Record<string, string>) {
  const response = await fetch(url, { method: 'POST', body, headers });
  return {
    status: response.status,
    headers: response.headers,
    body: new Uint8Array(await response.arrayBuffer()),
  };
}
const text = (body: Uint8Array) => Buffer.from(body).toString('utf8');

describe('OTLP/HTTP POST /v1/logs', () => {
  it('hands protobuf log records to the consumer as the spans of their decisions', async () => {
    const consumer = new RecordingConsumer();
    const { url, serve } = await serveWith(consumer);
    const answer = await post(url, encodeLogs(twoRecords()), PROTOBUF);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/x-protobuf');
    expect(answer.body).toHaveLength(0);
    const [inSpan, outside] = consumer.spans();
    expect(inSpan).toMatchObject({
      kind: SpanKind.INTERNAL,
      traceId: TRACE_ID,
      parentSpanId: SPAN_ID,
      spanId: loggedSpanId(TRACE_ID, SPAN_ID),
    });
    expect(inSpan!.attributes['idempotency.key']).toBe('k1');
    expect(outside!.attributes['idempotency.key']).toBe('k2');
    const counts = serve.counters.snapshot().http;
    expect(counts.logRecordsAccepted).toBe(2);
    expect(counts.spansAccepted).toBe(0);
  });

  it('accepts gzip-compressed JSON and answers in JSON', async () => {
    const consumer = new RecordingConsumer();
    const { url } = await serveWith(consumer);
    const body = gzipSync(JSON.stringify(encodeLogsJson(twoRecords())));
    const answer = await post(url, body, { ...JSON_UTF8, 'content-encoding': 'gzip' });
    expect(answer.status).toBe(200);
    expect(JSON.parse(text(answer.body))).toEqual({});
    expect(consumer.spans()).toHaveLength(2);
  });

  it('reports records the consumer refused as partial_success with rejectedLogRecords', async () => {
    const consumer = new RecordingConsumer();
    consumer.result = { rejectedSpans: 1, errorMessage: 'too old', rejectedByReason: { KS_SPAN_TOO_OLD: 1 } };
    const { url, serve } = await serveWith(consumer);
    const json = await post(url, JSON.stringify(encodeLogsJson(twoRecords())), JSON_UTF8);
    expect(JSON.parse(text(json.body))).toEqual({
      partialSuccess: { rejectedLogRecords: '1', errorMessage: 'too old' },
    });
    const protobuf = await post(url, encodeLogs(twoRecords()), PROTOBUF);
    // ExportLogsServiceResponse has ExportTraceServiceResponse's layout: field 1 counts what was rejected.
    expect(decodeExportResponse(protobuf.body).partialSuccess).toEqual({
      rejectedSpans: 1,
      errorMessage: 'too old',
    });
    const counts = serve.counters.snapshot().http;
    expect(counts.logRecordsAccepted).toBe(2);
    expect(counts.logRecordsRejected).toEqual({ KS_SPAN_TOO_OLD: 2 });
    expect(counts.spansRejected).toEqual({});
  });

  it('refuses a malformed payload with 400 and its code, counted as a refused payload', async () => {
    const { url, serve } = await serveWith(new RecordingConsumer());
    const bad = JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId: 'abc' }] }] }] });
    const answer = await post(url, bad, JSON_UTF8);
    expect(answer.status).toBe(400);
    expect(JSON.parse(text(answer.body)).code).toBe(GrpcCode.INVALID_ARGUMENT);
    expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ KS_OTLP_ID_LENGTH: 1 });
    expect((await post(url, encodeLogs(twoRecords()), PROTOBUF)).status).toBe(200);
  });

  it('answers 415 for another content type and 405 for another method, as on /v1/traces', async () => {
    const { url } = await serveWith(new RecordingConsumer());
    const unsupported = await post(url, 'x', { 'content-type': 'text/plain' });
    expect(unsupported.status).toBe(415);
    expect(decodeRpcStatus(unsupported.body).code).toBe(GrpcCode.INVALID_ARGUMENT);
    const get = await fetch(url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('holds log records to the admission limits: 503 past maxInFlightSpans, counted as log records', async () => {
    const consumer = new BlockingConsumer();
    const { url, serve } = await serveWith(consumer, { otlp: { admission: { maxInFlightSpans: 3 } } });
    const held = post(url, encodeLogs(twoRecords()), PROTOBUF);
    await consumer.whenHolding(1);
    expect(serve.inFlight()).toEqual({ requests: 1, spans: 2 });
    const refused = await post(url, encodeLogs(twoRecords()), PROTOBUF);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(serve.counters.snapshot().http.logRecordsRejected).toEqual({ saturated: 2 });
    consumer.release();
    expect((await held).status).toBe(200);
  });

  it('answers a retryable consumer error with 503 and Retry-After', async () => {
    const consumer = new RecordingConsumer();
    consumer.failWith = new KeyscopeError(STORE_BUSY, 'store is busy');
    const { url } = await serveWith(consumer);
    const answer = await post(url, encodeLogs(twoRecords()), PROTOBUF);
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('5');
  });

  it('under the mapping decode options, hands on only records with a key and counts every record', async () => {
    const consumer = new RecordingConsumer();
    const { url, serve } = await serveWith(consumer, {}, mappingDecodeOptions(defaultMapping()));
    const answer = await post(
      url,
      encodeLogs([record('k1'), record(undefined), record(undefined)]),
      PROTOBUF,
    );
    expect(answer.status).toBe(200);
    expect(consumer.spans().map((s) => s.attributes['idempotency.key'])).toEqual(['k1']);
    expect(serve.counters.snapshot().http.logRecordsAccepted).toBe(3);
  });
});

describe('OTLP/gRPC LogsService/Export', () => {
  function exportLogs(serve: RunningReceivers, body: Uint8Array) {
    const client = new grpc.Client(
      `127.0.0.1:${serve.addresses.otlpGrpc.port}`,
      grpc.credentials.createInsecure(),
    );
    clients.push(client);
    return new Promise<{ error: grpc.ServiceError | null; response: Buffer | undefined }>((resolve) => {
      client.makeUnaryRequest(
        LOGS_SERVICE_EXPORT_PATH,
        (bytes: Buffer) => bytes,
        (bytes: Buffer) => bytes,
        Buffer.from(body),
        (error, response) => resolve({ error, response }),
      );
    });
  }

  it('hands log records to the consumer and answers an empty ExportLogsServiceResponse', async () => {
    const consumer = new RecordingConsumer();
    const { serve } = await serveWith(consumer);
    const { error, response } = await exportLogs(serve, encodeLogs(twoRecords()));
    expect(error).toBeNull();
    expect(response).toHaveLength(0);
    expect(consumer.spans().map((s) => s.attributes['idempotency.key'])).toEqual(['k1', 'k2']);
    expect(serve.counters.snapshot().grpc.logRecordsAccepted).toBe(2);
  });

  it('answers partial_success, INVALID_ARGUMENT for a malformed payload, UNAVAILABLE when the consumer asks to retry', async () => {
    const consumer = new RecordingConsumer();
    consumer.result = { rejectedSpans: 1, errorMessage: 'late' };
    const { serve } = await serveWith(consumer);
    const partial = await exportLogs(serve, encodeLogs(twoRecords()));
    expect(decodeExportResponse(new Uint8Array(partial.response!)).partialSuccess).toEqual({
      rejectedSpans: 1,
      errorMessage: 'late',
    });
    const malformed = await exportLogs(serve, new Uint8Array([0x0a, 0x05, 0x01]));
    expect(malformed.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    consumer.failWith = new KeyscopeError(STORE_BUSY, 'store is busy');
    const busy = await exportLogs(serve, encodeLogs(twoRecords()));
    expect(busy.error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(serve.counters.snapshot().grpc.payloadsRejected).toMatchObject({ KS_OTLP_TRUNCATED: 1 });
  });
});
