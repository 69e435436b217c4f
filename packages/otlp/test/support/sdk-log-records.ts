import { context, type HrTime, trace } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  InMemoryLogRecordExporter,
  LoggerProvider,
  type ReadableLogRecord,
  SimpleLogRecordProcessor,
} from '@opentelemetry/sdk-logs';

export const PAYMENTS_RESOURCE = {
  'service.name': 'payments',
  'service.instance.id': 'payments-7d9f6c-abcde',
  'host.name': 'node-a.eu-west-1.internal',
  'cloud.region': 'eu-west-1',
  'process.pid': 4242,
};

export const TRACE_ID = '5b8efff798038103d269b633813fc60c';
export const SPAN_ID = 'eee19b7ec3c1b174';

/** 2026-01-01T00:00:00Z plus `offsetMillis` and a sub-millisecond part, as HrTime. */
export function at(offsetMillis: number): HrTime {
  return [1_767_225_600 + Math.floor(offsetMillis / 1000), (offsetMillis % 1000) * 1_000_000 + 123_456];
}

/**
 * Log records from the real OpenTelemetry JS SDK (sdk-logs), one service: a dedup decision logged
 * inside a span (trace and span id), one logged outside any trace, a record with a structured body
 * and no key, and one of every attribute value type the SDK accepts.
 */
export function sdkLogRecords(): ReadableLogRecord[] {
  const exporter = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({
    resource: resourceFromAttributes(PAYMENTS_RESOURCE),
    processors: [new SimpleLogRecordProcessor({ exporter })],
  });
  const logger = provider.getLogger('payments-dedup', '2.0.1');
  const inSpan = trace.setSpanContext(context.active(), {
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    traceFlags: 1,
  });
  logger.emit({
    timestamp: at(0),
    observedTimestamp: at(1),
    severityNumber: SeverityNumber.INFO,
    severityText: 'INFO',
    body: 'idempotency decision: miss',
    eventName: 'idempotency.decision',
    attributes: {
      'idempotency.key': 'key-0001',
      'idempotency.outcome': 'miss',
      'idempotency.store': 'node-a',
      'http.route': '/payments',
    },
    context: inSpan,
  });
  logger.emit({
    timestamp: at(2000),
    severityNumber: SeverityNumber.WARN2,
    severityText: 'WARN',
    body: 'idempotency decision: hit',
    attributes: { 'idempotency.key': 'key-0001', 'idempotency.outcome': 'hit' },
  });
  logger.emit({
    timestamp: at(3000),
    severityNumber: SeverityNumber.DEBUG,
    body: { message: 'request received', bytes: 512, nested: { ok: true } },
    attributes: { 'http.route': '/health' },
  });
  logger.emit({
    observedTimestamp: at(4000),
    body: 'every value type',
    attributes: {
      'idempotency.key': 'key-0002',
      text: 'żółć ✓ 日本',
      empty: '',
      integer: -42,
      double: 0.1875,
      flag: false,
      list: ['a', 'b'],
      numbers: [1, 2.5],
      map: { inner: 'value', deeper: { n: 1 } },
      bytes: new Uint8Array([0, 1, 254, 255]),
    },
  });
  return exporter.getFinishedLogRecords();
}
