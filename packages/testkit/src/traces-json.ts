import { hexId } from '@keyscope/attempts/testing';

/**
 * An OTLP/JSON ExportTraceServiceRequest with one span per id (trace `…0001`, span `…<id>`, key
 * `k<id>`), written by hand as senders do rather than by keyscope's own encoder.
 */
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
