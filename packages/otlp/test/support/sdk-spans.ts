import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/**
 * Finished spans from the real OpenTelemetry JS SDK: two services (two resources), two
 * instrumentation scopes, every span kind, statuses, events, parent links, and every attribute
 * value the SDK accepts (strings, booleans, ints including negative and beyond 2^53, doubles,
 * homogeneous arrays, arrays with null holes).
 */
export function sdkSpans(): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const payments = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'payments',
      'service.namespace': 'checkout',
      'service.version': '4.2.0',
      'service.instance.id': 'payments-7d9f6c-abcde',
      'host.name': 'node-a.eu-west-1.internal',
      'k8s.cluster.name': 'prod-eu-1',
      'k8s.pod.name': 'payments-7d9f6c-abcde',
      'cloud.region': 'eu-west-1',
      'cloud.availability_zone': 'eu-west-1b',
      'deployment.environment.name': 'production',
      'process.pid': 4242,
      'process.runtime.version': '20.19.0',
      'host.arch.bits': 64,
      'telemetry.sdk.language': 'nodejs',
      'service.tags': ['critical', 'pci'],
    }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const ledger = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': 'ledger',
      'cloud.region': 'eu-central-1',
      'ünï.cödé': '✓',
    }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });

  const http = payments.getTracer('@opentelemetry/instrumentation-http', '0.223.0');
  const gate = payments.getTracer('keyscope-gate');
  const start = [1_700_000_000, 123_456_789] as [number, number];

  const server = http.startSpan('POST /api/v1/payments', {
    kind: SpanKind.SERVER,
    startTime: start,
    attributes: {
      'http.request.method': 'POST',
      'http.route': '/api/v1/payments',
      'http.response.status_code': 201,
      'idempotency.key': 'key-0001',
      'idempotency.outcome': 'miss',
      'idempotency.hit': false,
      'network.peer.port': 51234,
      'payment.amount': 1999.95,
      'payment.ratio': -0.125,
      'payment.count.negative': -42,
      'payment.count.huge': 2 ** 60,
      'payment.count.min': -(2 ** 63),
      'payment.count.unsafe': 2 ** 53 + 2,
      'http.request.header.idempotency-key': ['key-0001'],
      'retry.delays': [100, 200, 400],
      'retry.jitter': [0.5, 1.25],
      'feature.flags': [true, false, true],
      'sparse.values': ['a', null, 'c'],
      'empty.array': [],
      'unicode.value': 'naïve café ✓ 🚀',
      'long.value': 'x'.repeat(1000),
    },
  });
  const serverContext = trace.setSpan(context.active(), server);
  server.addEvent('dedup.lookup', { 'cache.hit': false, 'lookup.micros': 812 }, [1_700_000_000, 223_456_789]);
  server.addEvent('no.attributes', [1_700_000_000, 323_456_000]);

  const client = http.startSpan(
    'POST ledger',
    {
      kind: SpanKind.CLIENT,
      startTime: [1_700_000_000, 400_000_001],
      attributes: {
        'http.request.resend_count': 1,
        'server.address': 'ledger.internal',
        'server.port': 8443,
      },
    },
    serverContext,
  );
  client.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream timed out ⏱' });
  client.addEvent('exception', {
    'exception.type': 'TimeoutError',
    'exception.message': 'timed out after 2000ms',
  });
  client.end([1_700_000_002, 400_000_999]);

  const internal = gate.startSpan(
    'verify scope',
    { kind: SpanKind.INTERNAL, startTime: start },
    serverContext,
  );
  internal.setStatus({ code: SpanStatusCode.OK });
  internal.end(start);

  for (const [name, kind] of [
    ['publish', SpanKind.PRODUCER],
    ['consume', SpanKind.CONSUMER],
  ] as const) {
    gate.startSpan(name, { kind, startTime: start }, serverContext).end([1_700_000_003, 999_999_999]);
  }
  server.setStatus({ code: SpanStatusCode.UNSET });
  server.end([1_700_000_002, 0]);

  const ledgerSpan = ledger
    .getTracer('ledger-http', '1.0.0')
    .startSpan(
      'POST /ledger',
      { kind: SpanKind.SERVER, startTime: [1_700_000_000, 500_000_000] },
      serverContext,
    );
  ledgerSpan.setAttribute('idempotency.key', 'key-0001');
  ledgerSpan.setAttribute('idempotency.outcome', 'hit');
  ledgerSpan.end([1_700_000_001, 0]);

  // A root span far in the future and one at the epoch: the time conversion's edges.
  ledger
    .getTracer('ledger-http', '1.0.0')
    .startSpan('late', { startTime: [4_102_444_800, 999_999_999] })
    .end([4_102_444_801, 1]);
  ledger
    .getTracer('ledger-http', '1.0.0')
    .startSpan('epoch', { startTime: [0, 0] })
    .end([0, 1_000]);

  return exporter.getFinishedSpans();
}
