import { type RunningReceivers, resolveServeConfig, silentLogger, startReceivers } from '@keyscope/analyzer';
import { type ErrorDefinition, KeyscopeError } from '@keyscope/errors';
import { ACCEPTED_ALL, type ConsumeResult, type Span, type SpanConsumer } from '@keyscope/otlp';
import { SpanKind } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * The receivers' failure answers as the real exporters read them: a retryable refusal (503 with
 * Retry-After, gRPC UNAVAILABLE) makes them send the same spans again, a permanent one (400,
 * INVALID_ARGUMENT) makes them drop the spans at once.
 */

const STORE_BUSY: ErrorDefinition = {
  code: 'KS_TEST_STORE_BUSY',
  httpStatus: 503,
  retryable: true,
  description: 'test',
};
const REFUSED: ErrorDefinition = {
  code: 'KS_TEST_REFUSED',
  httpStatus: 400,
  retryable: false,
  description: 'test',
};

/** Fails its first `failures` calls with `error`, then takes everything. */
class FailingFirstConsumer implements SpanConsumer {
  calls = 0;
  readonly accepted: Span[] = [];

  constructor(
    private readonly failures: number,
    private readonly error: KeyscopeError,
  ) {}

  async consumeSpans(spans: Span[]): Promise<ConsumeResult> {
    this.calls += 1;
    if (this.calls <= this.failures) throw this.error;
    this.accepted.push(...spans);
    return ACCEPTED_ALL;
  }
}

interface Exporter {
  export(spans: ReadableSpan[], done: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
}

const HTTP_EXPORTERS: [string, (serve: RunningReceivers) => Exporter][] = [
  ['exporter-trace-otlp-proto', (serve) => new ProtoExporter({ url: httpUrl(serve) }) as unknown as Exporter],
  [
    'exporter-trace-otlp-http (JSON)',
    (serve) => new JsonExporter({ url: httpUrl(serve) }) as unknown as Exporter,
  ],
];
const GRPC_EXPORTER: [string, (serve: RunningReceivers) => Exporter] = [
  'exporter-trace-otlp-grpc',
  (serve) =>
    new GrpcExporter({ url: `http://127.0.0.1:${serve.addresses.otlpGrpc.port}` }) as unknown as Exporter,
];
const EXPORTERS = [...HTTP_EXPORTERS, GRPC_EXPORTER];

/** grpc-js status code UNAVAILABLE. */
const UNAVAILABLE = 14;

function httpUrl(serve: RunningReceivers): string {
  return `http://127.0.0.1:${serve.addresses.otlpHttp.port}/v1/traces`;
}

function oneSpan(): ReadableSpan[] {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  provider
    .getTracer('keyscope-conformance')
    .startSpan('POST /payments', { kind: SpanKind.SERVER, attributes: { 'idempotency.key': 'key-0001' } })
    .end();
  return memory.getFinishedSpans();
}

const running: RunningReceivers[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((serve) => serve.stop()));
});

async function serveWith(consumer: SpanConsumer): Promise<RunningReceivers> {
  const config = resolveServeConfig({
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 }, admission: { retryAfterSeconds: 1 } },
    shutdown: { drainTimeoutMillis: 1_000 },
  });
  const serve = await startReceivers(config, { consumer, logger: silentLogger });
  running.push(serve);
  return serve;
}

async function exportWith(exporter: Exporter, spans: ReadableSpan[]) {
  try {
    return await new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(spans, resolve));
  } finally {
    await exporter.shutdown();
  }
}

describe('real OpenTelemetry exporters read the receivers’ failures as the OTLP spec means them', () => {
  it.each(HTTP_EXPORTERS)(
    '%s retries a retryable refusal and delivers the spans once',
    async (_name, create) => {
      const consumer = new FailingFirstConsumer(1, new KeyscopeError(STORE_BUSY, 'store is busy'));
      const serve = await serveWith(consumer);
      const result = await exportWith(create(serve), oneSpan());
      expect(result.code).toBe(ExportResultCode.SUCCESS);
      expect(consumer.calls).toBe(2);
      expect(consumer.accepted.map((s) => s.name)).toEqual(['POST /payments']);
    },
  );

  it('exporter-trace-otlp-grpc is answered UNAVAILABLE for a retryable refusal', async () => {
    const consumer = new FailingFirstConsumer(1, new KeyscopeError(STORE_BUSY, 'store is busy'));
    const serve = await serveWith(consumer);
    const result = await exportWith(GRPC_EXPORTER[1](serve), oneSpan());
    // The OTLP spec makes UNAVAILABLE retryable, but the JS gRPC exporter (0.223) retries no gRPC
    // status at all and drops the batch; a version that retries delivers it on the second call.
    if (result.code === ExportResultCode.SUCCESS) {
      expect(consumer.calls).toBe(2);
    } else {
      expect((result.error as { code?: number } | undefined)?.code).toBe(UNAVAILABLE);
      expect(consumer.calls).toBe(1);
    }
  });

  it.each(EXPORTERS)(
    '%s drops the spans after a permanent refusal without retrying',
    async (_name, create) => {
      const consumer = new FailingFirstConsumer(1, new KeyscopeError(REFUSED, 'refused'));
      const serve = await serveWith(consumer);
      const result = await exportWith(create(serve), oneSpan());
      expect(result.code).toBe(ExportResultCode.FAILED);
      expect(consumer.calls).toBe(1);
    },
  );
});
