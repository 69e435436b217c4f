import { type RunningReceivers, resolveServeConfig, silentLogger, startReceivers } from '@keyscope/analyzer';
import type { Span } from '@keyscope/otlp';
import { RecordingConsumer } from '@keyscope/testkit';
import { context, type HrTime, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The clients users run, against the real receivers over loopback: every span the OpenTelemetry
 * JS SDK produces must arrive in the consumer as it was recorded.
 */

interface Exporter {
  export(spans: ReadableSpan[], done: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
}

type Compression = 'none' | 'gzip';

const EXPORTERS: [string, Compression, (serve: RunningReceivers, compression: Compression) => Exporter][] =
  [];
for (const compression of ['none', 'gzip'] as const) {
  EXPORTERS.push(
    [
      'exporter-trace-otlp-proto',
      compression,
      (serve, c) =>
        new ProtoExporter({ url: httpUrl(serve), compression: c as never }) as unknown as Exporter,
    ],
    [
      'exporter-trace-otlp-http (JSON)',
      compression,
      (serve, c) => new JsonExporter({ url: httpUrl(serve), compression: c as never }) as unknown as Exporter,
    ],
    [
      'exporter-trace-otlp-grpc',
      compression,
      (serve, c) =>
        new GrpcExporter({
          url: `http://127.0.0.1:${serve.addresses.otlpGrpc.port}`,
          compression: c as never,
        }) as unknown as Exporter,
    ],
  );
}

function httpUrl(serve: RunningReceivers): string {
  return `http://127.0.0.1:${serve.addresses.otlpHttp.port}/v1/traces`;
}

const RESOURCE = {
  'service.name': 'payments',
  'service.instance.id': 'payments-7f9c-0',
  'host.name': 'node-a',
  'k8s.cluster.name': 'eu-1',
  'cloud.region': 'eu-west-1',
  'process.pid': 4242,
  'deployment.canary': false,
};

/** 2026-01-01T00:00:00Z plus a sub-millisecond part, as HrTime. */
function at(offsetMillis: number): HrTime {
  return [1_767_225_600 + Math.floor(offsetMillis / 1000), (offsetMillis % 1000) * 1_000_000 + 123_456];
}

/** Records the spans one payments request produces: every kind, status, attribute type, events. */
function recordSpans(): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes(RESOURCE),
    spanProcessors: [new SimpleSpanProcessor(memory)],
  });
  const tracer = provider.getTracer('keyscope-conformance', '1.2.3');

  const server = tracer.startSpan('POST /payments', {
    kind: SpanKind.SERVER,
    startTime: at(0),
    attributes: {
      'idempotency.key': 'key-0001',
      'idempotency.outcome': 'miss',
      'idempotency.hit': false,
      'http.response.status_code': 201,
      'http.server.request.duration': 0.1875,
      'payment.amount': -12.5,
      'unicode.note': 'żółć ✓ 日本',
      'empty.string': '',
      'http.request.header.idempotency-key': ['key-0001'],
      'retry.delays': [0.5, 1, 2.25],
      'retry.attempts': [1, 2, 3],
      'feature.flags': [true, false, true],
      'sparse.list': ['a', null, 'b'],
    },
  });
  server.addEvent('dedup.lookup', { 'idempotency.store': 'node-a', 'lookup.millis': 3 }, at(5));
  server.addEvent('no-attributes', at(6));
  server.setStatus({ code: SpanStatusCode.OK });

  const parent = trace.setSpan(context.active(), server);
  const client = tracer.startSpan(
    'POST ledger',
    {
      kind: SpanKind.CLIENT,
      startTime: at(10),
      attributes: {
        'http.request.resend_count': 1,
        'server.address': 'ledger.internal',
        'server.port': 8443,
      },
    },
    parent,
  );
  client.setStatus({ code: SpanStatusCode.ERROR, message: 'ledger timed out after 2 s' });
  client.recordException(new Error('ETIMEDOUT'), at(2010));
  client.end(at(2010));

  const internal = tracer.startSpan('validate', { kind: SpanKind.INTERNAL, startTime: at(1) }, parent);
  internal.end(at(2));
  const producer = tracer.startSpan(
    'payments.created send',
    { kind: SpanKind.PRODUCER, startTime: at(20) },
    parent,
  );
  producer.end(at(21));
  const consumer = tracer.startSpan('payments.created process', {
    kind: SpanKind.CONSUMER,
    startTime: at(30),
  });
  consumer.end(at(40));

  server.end(at(2100));
  return memory.getFinishedSpans();
}

/** OTel API kinds start at INTERNAL = 0; OTLP's at UNSPECIFIED = 0. */
const OTLP_KIND: Record<SpanKind, number> = {
  [SpanKind.INTERNAL]: 1,
  [SpanKind.SERVER]: 2,
  [SpanKind.CLIENT]: 3,
  [SpanKind.PRODUCER]: 4,
  [SpanKind.CONSUMER]: 5,
};

function millis(time: HrTime): number {
  return time[0] * 1000 + time[1] / 1e6;
}

function expectSameTime(received: number, recorded: HrTime): void {
  expect(Math.abs(received - millis(recorded))).toBeLessThanOrEqual(0.001);
}

function expectIntact(received: Span, recorded: ReadableSpan): void {
  expect(received.traceId).toBe(recorded.spanContext().traceId);
  expect(received.parentSpanId).toBe(recorded.parentSpanContext?.spanId ?? '');
  expect(received.name).toBe(recorded.name);
  expect(received.kind).toBe(OTLP_KIND[recorded.kind]);
  expect(received.status).toEqual({ code: recorded.status.code, message: recorded.status.message ?? '' });
  expectSameTime(received.startTimeUnixMillis, recorded.startTime);
  expectSameTime(received.endTimeUnixMillis, recorded.endTime);
  expect({ ...received.attributes }).toEqual(recorded.attributes);
  expect(received.events).toHaveLength(recorded.events.length);
  recorded.events.forEach((event, i) => {
    const got = received.events[i]!;
    expect(got.name).toBe(event.name);
    expectSameTime(got.timeUnixMillis, event.time);
    expect({ ...got.attributes }).toEqual(event.attributes ?? {});
  });
  expect({ ...received.resource.attributes }).toEqual(recorded.resource.attributes);
  expect(received.scope).toEqual({
    name: recorded.instrumentationScope.name,
    version: recorded.instrumentationScope.version,
  });
}

describe('real OpenTelemetry exporters → keyscope receivers', () => {
  const consumer = new RecordingConsumer();
  let serve: RunningReceivers;
  const recorded = recordSpans();

  beforeAll(async () => {
    const config = resolveServeConfig({
      api: { port: 0 },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
      shutdown: { drainTimeoutMillis: 1_000 },
    });
    serve = await startReceivers(config, { consumer, logger: silentLogger });
  });

  afterAll(async () => {
    await serve?.stop();
  });

  it('records the scenario the exporters send', () => {
    expect(recorded).toHaveLength(5);
    expect(new Set(recorded.map((s) => s.kind)).size).toBe(5);
  });

  it.each(EXPORTERS)(
    '%s (compression: %s) delivers every span intact',
    async (_name, compression, create) => {
      consumer.payloads.length = 0;
      const exporter = create(serve, compression);
      try {
        const result = await new Promise<{ code: number; error?: Error }>((resolve) =>
          exporter.export(recorded, resolve),
        );
        expect(result.error).toBeUndefined();
        expect(result.code).toBe(ExportResultCode.SUCCESS);
      } finally {
        await exporter.shutdown();
      }
      const received = consumer.spans();
      expect(received).toHaveLength(recorded.length);
      for (const span of recorded) {
        const match = received.find((r) => r.spanId === span.spanContext().spanId);
        expect(match, `span ${span.name}`).toBeDefined();
        expectIntact(match!, span);
      }
    },
  );

  it('counts what each transport took in', () => {
    const counts = serve.counters.snapshot();
    expect(counts.http.spansAccepted).toBe(4 * recorded.length);
    expect(counts.grpc.spansAccepted).toBe(2 * recorded.length);
    expect(counts.http.bytesReceivedCompressed).toBeLessThan(counts.http.bytesReceivedDecompressed);
  });
});
