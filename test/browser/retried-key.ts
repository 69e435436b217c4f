import { createAttributes, type Span, SpanKind, StatusCode } from '@keyscope/otlp';

const hex = (n: number, length: number) => n.toString(16).padStart(length, '0');
const scope = { name: 'browser-test', version: '1' };

export interface RetriedKeyOptions {
  key: string;
  /** Distinguishes the trace ids of several keys in one test. */
  traceNumber: number;
  startUnixMillis: number;
  /** When the client sends the key again, after the first send timed out. */
  retryAfterMillis: number;
}

/**
 * A client that sends `key`, gives up waiting, and sends it again to another node whose store
 * never heard of it: both node-scoped stores execute it (a cross-store duplicate). The second
 * send is the last thing on the timeline, answered within a few milliseconds, so its marks sit
 * at the timeline's right edge.
 */
export function retriedKey(options: RetriedKeyOptions): Span[] {
  const trace = hex(options.traceNumber, 32);
  const client = {
    attributes: Object.assign(createAttributes(), {
      'service.name': 'checkout',
      'service.instance.id': 'checkout-1',
    }),
  };
  return [0, 1].flatMap((send): Span[] => {
    const start = options.startUnixMillis + send * options.retryAfterMillis;
    const node = send === 0 ? 'payments-node-a' : 'payments-node-b';
    const clientSpanId = hex(options.traceNumber * 16 + send, 16);
    return [
      {
        traceId: trace,
        spanId: clientSpanId,
        parentSpanId: '',
        name: 'POST',
        kind: SpanKind.CLIENT,
        startTimeUnixMillis: start,
        endTimeUnixMillis: start + (send === 0 ? options.retryAfterMillis : 3),
        status: { code: send === 0 ? StatusCode.ERROR : StatusCode.UNSET, message: '' },
        attributes: Object.assign(createAttributes(), {
          'idempotency.key': options.key,
          'http.request.resend_count': send,
          'server.address': 'payments.internal',
          ...(send === 0 ? { 'error.type': 'timeout' } : { 'http.response.status_code': 201 }),
        }),
        events: [],
        resource: client,
        scope,
      },
      {
        traceId: trace,
        spanId: hex(options.traceNumber * 16 + 8 + send, 16),
        parentSpanId: clientSpanId,
        name: 'POST /payments',
        kind: SpanKind.SERVER,
        startTimeUnixMillis: start + 1,
        endTimeUnixMillis: start + (send === 0 ? 300 : 2),
        status: { code: StatusCode.UNSET, message: '' },
        attributes: Object.assign(createAttributes(), {
          'idempotency.key': options.key,
          'idempotency.outcome': 'miss',
          'idempotency.scope': 'node',
          'idempotency.store': `payments-idem@${node}`,
          'tenant.id': 'acme',
          'http.route': '/payments',
        }),
        events: [],
        resource: {
          attributes: Object.assign(createAttributes(), {
            'service.name': 'payments',
            'service.instance.id': node,
            'k8s.cluster.name': 'prod-1',
            'cloud.region': 'eu-west-1',
          }),
        },
        scope,
      },
    ];
  });
}
