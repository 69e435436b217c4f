import { type RunningReceivers, resolveServeConfig, silentLogger, startReceivers } from '@keyscope/analyzer';
import { createKeyedSpanSampler } from '@keyscope/gate';
import { RecordingConsumer } from '@keyscope/testkit';
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The gate's sampler in the real SDK, in front of the usual ParentBased(TraceIdRatio(1%)), with the
 * real OTLP exporter sending to keyscope's real receiver: what arrives is counted there.
 */
const CHECKOUTS = 4000;
const KEYED_EVERY = 10;
const RATIO = 0.01;

let receivers: RunningReceivers;
let received: RecordingConsumer;

beforeAll(async () => {
  received = new RecordingConsumer();
  const config = resolveServeConfig({
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    shutdown: { drainTimeoutMillis: 1_000 },
  });
  receivers = await startReceivers(config, { consumer: received, logger: silentLogger });
});

afterAll(async () => {
  await receivers?.stop();
});

/**
 * Runs CHECKOUTS traces through a provider with `sampler`: each a root `checkout` span with an
 * unkeyed `render` child; every KEYED_EVERY-th one also sends `POST` with an idempotency key
 * among its start attributes, and the send has a `retry-backoff` child. Returns the names that
 * arrived at keyscope, counted.
 */
async function arrivals(sampler: Sampler): Promise<Map<string, number>> {
  received.payloads.length = 0;
  const exporter = new OTLPTraceExporter({
    url: `http://127.0.0.1:${receivers.addresses.otlpHttp.port}/v1/traces`,
  });
  const provider = new BasicTracerProvider({
    sampler,
    resource: resourceFromAttributes({ 'service.name': 'checkout', 'service.instance.id': 'checkout-1' }),
    spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 8192, maxExportBatchSize: 512 })],
  });
  const tracer = provider.getTracer('checkout');
  for (let i = 0; i < CHECKOUTS; i++) {
    const root = tracer.startSpan('checkout', { kind: SpanKind.SERVER });
    const inRoot = trace.setSpan(ROOT_CONTEXT, root);
    tracer.startSpan('render', {}, inRoot).end();
    if (i % KEYED_EVERY === 0) {
      const send = tracer.startSpan(
        'POST',
        {
          kind: SpanKind.CLIENT,
          attributes: { 'idempotency.key': `order-${i}`, 'http.request.method': 'POST' },
        },
        inRoot,
      );
      tracer.startSpan('retry-backoff', {}, trace.setSpan(ROOT_CONTEXT, send)).end();
      send.end();
    }
    root.end();
  }
  await provider.forceFlush();
  await provider.shutdown();
  const counts = new Map<string, number>();
  for (const span of received.spans()) counts.set(span.name, (counts.get(span.name) ?? 0) + 1);
  return counts;
}

const ratioSampler = () => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(RATIO) });

describe('the keyed-span sampler in the OpenTelemetry SDK, exporting to keyscope', () => {
  it('delivers every span that started with a key, and about 1% of the others', async () => {
    const counts = await arrivals(createKeyedSpanSampler({ otherwise: ratioSampler() }));
    const keyed = CHECKOUTS / KEYED_EVERY;
    expect(counts.get('POST')).toBe(keyed);
    // A keyed span is sampled, so ParentBased keeps its children.
    expect(counts.get('retry-backoff')).toBe(keyed);
    // Binomial(4000, 1%): 40 expected, a standard deviation of 6.3.
    const roots = counts.get('checkout') ?? 0;
    expect(roots).toBeGreaterThanOrEqual(10);
    expect(roots).toBeLessThanOrEqual(90);
    expect(counts.get('render') ?? 0).toBe(roots);
    // Every POST came with its key.
    const keys = received
      .spans()
      .filter((span) => span.name === 'POST')
      .map((span) => span.attributes['idempotency.key']);
    expect(new Set(keys).size).toBe(keyed);
  });

  it('loses most keyed spans without it: the ratio sampler alone keeps only those under sampled roots', async () => {
    const counts = await arrivals(ratioSampler());
    expect(counts.get('POST') ?? 0).toBeLessThan(CHECKOUTS / KEYED_EVERY / 4);
  });
});
