import { type Span, SpanKind, StatusCode } from '@keyscope/otlp';

/** Builds keyscope spans for tests: ids end in the given number (`traceId: 1` → `…0001`). */
export function span(overrides: Partial<Span> & { trace?: number; id?: number } = {}): Span {
  const { trace = 1, id = 1, ...fields } = overrides;
  return {
    traceId: hexId(trace, 32),
    spanId: hexId(id, 16),
    parentSpanId: '',
    name: 'POST /payments',
    kind: SpanKind.SERVER,
    startTimeUnixMillis: 1_767_225_600_000,
    endTimeUnixMillis: 1_767_225_600_250,
    status: { code: StatusCode.UNSET, message: '' },
    attributes: { 'idempotency.key': 'k1' },
    events: [],
    resource: { attributes: { 'service.name': 'payments' } },
    scope: { name: 'keyscope-test', version: '1.0.0' },
    ...fields,
  };
}

export function hexId(n: number, length: number): string {
  return n.toString(16).padStart(length, '0');
}

/** An OTLP/JSON ExportTraceServiceRequest with one span per id, written by hand as senders do. */
export function tracesJson(spanIds: number[]): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'payments' } }] },
        scopeSpans: [
          {
            scope: { name: 'keyscope-test' },
            spans: spanIds.map((id) => ({
              traceId: hexId(1, 32),
              spanId: hexId(id, 16),
              name: 'POST /payments',
              kind: 2,
              startTimeUnixNano: '1767225600000000000',
              endTimeUnixNano: '1767225600250000000',
              attributes: [{ key: 'idempotency.key', value: { stringValue: `k${id}` } }],
            })),
          },
        ],
      },
    ],
  });
}
