import {
  type RunningReceivers,
  type RunningService,
  resolveServeConfig,
  silentLogger,
  startReceivers,
  startServe,
} from '@keyscope/analyzer';
import type { Span } from '@keyscope/otlp';
import { RecordingConsumer } from '@keyscope/testkit';
import { context, type HrTime, SpanKind, trace } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPLogExporter as GrpcLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPTraceExporter as GrpcTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  InMemoryLogRecordExporter,
  LoggerProvider,
  type ReadableLogRecord,
  SimpleLogRecordProcessor,
} from '@opentelemetry/sdk-logs';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The OpenTelemetry JS logs SDK and its three OTLP exporters, against the real receivers over
 * loopback: every log record arrives as the span of what it states, and decisions recorded only
 * in logs, or both in a span and in a log, are judged as they would be recorded in spans.
 */

interface Exporter<T> {
  export(items: T[], done: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
}

type Compression = 'none' | 'gzip';
type Transport = 'exporter-logs-otlp-proto' | 'exporter-logs-otlp-http (JSON)' | 'exporter-logs-otlp-grpc';

interface Ports {
  http: number;
  grpc: number;
}

function logExporter(
  transport: Transport,
  ports: Ports,
  compression: Compression,
): Exporter<ReadableLogRecord> {
  const url = `http://127.0.0.1:${ports.http}/v1/logs`;
  const options = { url, compression: compression as never };
  if (transport === 'exporter-logs-otlp-proto') return new ProtoLogExporter(options) as never;
  if (transport === 'exporter-logs-otlp-http (JSON)') return new JsonLogExporter(options) as never;
  return new GrpcLogExporter({
    url: `http://127.0.0.1:${ports.grpc}`,
    compression: compression as never,
  }) as never;
}

function traceExporter(transport: Transport, ports: Ports): Exporter<ReadableSpan> {
  const url = `http://127.0.0.1:${ports.http}/v1/traces`;
  if (transport === 'exporter-logs-otlp-proto') return new ProtoTraceExporter({ url }) as never;
  if (transport === 'exporter-logs-otlp-http (JSON)') return new JsonTraceExporter({ url }) as never;
  return new GrpcTraceExporter({ url: `http://127.0.0.1:${ports.grpc}` }) as never;
}

const TRANSPORTS: Transport[] = [
  'exporter-logs-otlp-proto',
  'exporter-logs-otlp-http (JSON)',
  'exporter-logs-otlp-grpc',
];

async function send<T>(exporter: Exporter<T>, items: T[]): Promise<void> {
  try {
    const result = await new Promise<{ code: number; error?: Error }>((resolve) =>
      exporter.export(items, resolve),
    );
    expect(result.error).toBeUndefined();
    expect(result.code).toBe(ExportResultCode.SUCCESS);
  } finally {
    await exporter.shutdown();
  }
}

function nodeResource(node: string) {
  return resourceFromAttributes({
    'service.name': 'payments',
    'service.instance.id': `payments-${node}`,
    'host.name': `node-${node}`,
    'process.pid': 4242,
  });
}

/** A logger whose records the test collects (the SDK's own in-memory exporter). */
function memoryLogger(node: string) {
  const memory = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({
    resource: nodeResource(node),
    processors: [new SimpleLogRecordProcessor({ exporter: memory })],
  });
  return {
    logger: provider.getLogger('payments-dedup', '2.0.1'),
    records: () => memory.getFinishedLogRecords(),
  };
}

function hrTime(unixMillis: number): HrTime {
  return [Math.floor(unixMillis / 1000), Math.round((unixMillis % 1000) * 1000) * 1000];
}

function millis(time: HrTime): number {
  return time[0] * 1000 + time[1] / 1e6;
}

const decision = (key: string, store: string) => ({
  'idempotency.key': key,
  'idempotency.outcome': 'miss',
  'idempotency.store': store,
  'http.route': '/payments',
});

describe('real OpenTelemetry log exporters → keyscope receivers', () => {
  const consumer = new RecordingConsumer();
  let serve: RunningReceivers;
  const start = Date.UTC(2026, 0, 1);
  const traceId = '5b8efff798038103d269b633813fc60c';
  const spanId = 'eee19b7ec3c1b174';
  const { logger, records } = memoryLogger('a');
  logger.emit({
    timestamp: hrTime(start),
    severityNumber: SeverityNumber.INFO,
    body: 'idempotency decision: miss',
    eventName: 'idempotency.decision',
    attributes: { ...decision('key-0001', 'node-a'), 'lookup.millis': 3, 'retry.delays': [0.5, 1] },
    context: trace.setSpanContext(context.active(), { traceId, spanId, traceFlags: 1 }),
  });
  logger.emit({
    timestamp: hrTime(start + 2000),
    severityNumber: SeverityNumber.WARN,
    body: { message: 'structured', bytes: 12 },
    attributes: { ...decision('key-0001', 'node-a'), 'idempotency.outcome': 'hit' },
  });
  logger.emit({
    timestamp: hrTime(start + 3000),
    body: 'no key here',
    attributes: { 'http.route': '/health' },
  });
  const recorded = records();

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

  const cases = TRANSPORTS.flatMap((t) => (['none', 'gzip'] as const).map((c) => [t, c] as const));
  it.each(cases)('%s (compression: %s) delivers every log record intact', async (transport, compression) => {
    consumer.payloads.length = 0;
    const ports = { http: serve.addresses.otlpHttp.port, grpc: serve.addresses.otlpGrpc.port };
    await send(logExporter(transport, ports, compression), recorded);
    const received = consumer.spans();
    expect(received).toHaveLength(recorded.length);
    for (const [i, record] of recorded.entries()) expectIntact(received[i]!, record);
    expect(received[0]).toMatchObject({
      traceId,
      parentSpanId: spanId,
      kind: 1,
      name: 'idempotency.decision',
    });
  });

  it('counts the log records each transport took in, apart from spans', () => {
    const counts = serve.counters.snapshot();
    expect(counts.http.logRecordsAccepted).toBe(4 * recorded.length);
    expect(counts.grpc.logRecordsAccepted).toBe(2 * recorded.length);
    expect(counts.http.spansAccepted + counts.grpc.spansAccepted).toBe(0);
  });
});

function expectIntact(received: Span, recorded: ReadableLogRecord): void {
  const context = recorded.spanContext;
  if (context !== undefined) {
    expect(received.traceId).toBe(context.traceId);
    expect(received.parentSpanId).toBe(context.spanId);
  } else expect(received.parentSpanId).toBe('');
  expect(received.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(received.spanId).toMatch(/^[0-9a-f]{16}$/);
  expect(Math.abs(received.startTimeUnixMillis - millis(recorded.hrTime))).toBeLessThanOrEqual(0.001);
  expect({ ...received.attributes }).toEqual(recorded.attributes);
  expect({ ...received.resource.attributes }).toEqual(recorded.resource.attributes);
  expect(received.scope).toEqual({
    name: recorded.instrumentationScope.name,
    version: recorded.instrumentationScope.version,
  });
}

describe('decisions in logs, judged by the embedded service', () => {
  let service: RunningService;
  let ports: Ports;
  let api: string;

  beforeAll(async () => {
    const config = resolveServeConfig({
      api: { port: 0 },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
      db: { path: ':memory:' },
      shutdown: { drainTimeoutMillis: 1_000 },
    });
    service = await startServe(config, { logger: silentLogger });
    ports = { http: service.addresses.otlpHttp.port, grpc: service.addresses.otlpGrpc.port };
    api = `http://127.0.0.1:${service.addresses.api.port}`;
  });

  afterAll(async () => {
    await service?.stop();
  });

  async function lookup(key: string) {
    const response = await fetch(`${api}/api/v1/keys/${encodeURIComponent(key)}`);
    expect(response.status).toBe(200);
    return (await response.json()) as {
      executions: number;
      ranTwice: boolean;
      attempts: unknown[];
      findings: { class: string; stores: string[] }[];
    };
  }

  it.each(TRANSPORTS)(
    '%s: a duplicate recorded only in logs, on two nodes, is a cross-store duplicate',
    async (transport) => {
      const key = `logs-only ${transport}`;
      const now = Date.now() - 10_000;
      const a = memoryLogger('a');
      const b = memoryLogger('b');
      a.logger.emit({ timestamp: hrTime(now), body: 'decision', attributes: decision(key, 'node-a') });
      b.logger.emit({ timestamp: hrTime(now + 2100), body: 'decision', attributes: decision(key, 'node-b') });
      await send(logExporter(transport, ports, 'gzip'), [...a.records(), ...b.records()]);
      const found = await lookup(key);
      expect(found.findings.map((f) => f.class)).toEqual(['cross_store_duplicate']);
      expect(found.findings[0]!.stores).toEqual(['node-a', 'node-b']);
      expect(found).toMatchObject({ executions: 2, ranTwice: true });
    },
  );

  it.each(TRANSPORTS)(
    '%s: a decision recorded both as a span and as a log record in it is one execution',
    async (transport) => {
      const key = `span-and-log ${transport}`;
      const now = Date.now() - 10_000;
      const memory = new InMemorySpanExporter();
      const tracer = new BasicTracerProvider({
        resource: nodeResource('a'),
        spanProcessors: [new SimpleSpanProcessor(memory)],
      }).getTracer('payments');
      const span = tracer.startSpan('POST /payments', {
        kind: SpanKind.SERVER,
        startTime: hrTime(now),
        attributes: decision(key, 'node-a'),
      });
      const a = memoryLogger('a');
      a.logger.emit({
        timestamp: hrTime(now + 5),
        body: 'decision',
        attributes: decision(key, 'node-a'),
        context: trace.setSpan(context.active(), span),
      });
      span.end(hrTime(now + 40));
      await send(traceExporter(transport, ports), memory.getFinishedSpans());
      await send(logExporter(transport, ports, 'none'), a.records());
      const found = await lookup(key);
      expect(found.attempts).toHaveLength(2);
      expect(found).toMatchObject({ executions: 1, ranTwice: false, findings: [] });
    },
  );
});
