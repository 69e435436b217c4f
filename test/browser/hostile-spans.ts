import { createAttributes, type Span, SpanKind, StatusCode } from '@keyscope/otlp';

/** Markup that would run script if any page ever parsed span text as HTML. */
export const HOSTILE_KEY = '<img src=x onerror="window.__pwned=1;alert(1)">';
export const HOSTILE_SERVICE = 'pay<script>window.__pwned=2</script>ments';
export const HOSTILE_STORE_PREFIX = '<svg onload="window.__pwned=3">';
const HOSTILE_ROUTE = '/pay<img src=x onerror=alert(4)>';

const hex = (n: number, length: number) => n.toString(16).padStart(length, '0');

function attributes(values: Record<string, string | number>) {
  return Object.assign(createAttributes(), values);
}

/**
 * One key sent by a client twice and executed by two node-scoped stores, every value a sender
 * controls (key, service, store, nodes, route, tenant) carrying markup: a cross-store duplicate
 * that reaches every page.
 */
export function hostileDuplicate(startUnixMillis: number): Span[] {
  const spans: Span[] = [];
  const trace = hex(0xbad, 32);
  const scope = { name: 'hostile-test', version: '1' };
  const client = {
    attributes: attributes({ 'service.name': '<b>checkout</b>', 'service.instance.id': '<i>client-1</i>' }),
  };
  [0, 1].forEach((send) => {
    const start = startUnixMillis + send * 2500;
    const node = send === 0 ? '<img src=x onerror=alert(5)>node-a' : '"><script>alert(6)</script>node-b';
    const server = {
      attributes: attributes({
        'service.name': HOSTILE_SERVICE,
        'service.instance.id': node,
        'k8s.cluster.name': '<u>cluster</u>',
        'cloud.region': '<marquee>region</marquee>',
      }),
    };
    const clientId = hex(0x100 + send, 16);
    spans.push({
      traceId: trace,
      spanId: clientId,
      parentSpanId: '',
      name: 'POST',
      kind: SpanKind.CLIENT,
      startTimeUnixMillis: start,
      endTimeUnixMillis: start + (send === 0 ? 2000 : 400),
      status: { code: send === 0 ? StatusCode.ERROR : StatusCode.UNSET, message: '' },
      attributes: attributes({
        'idempotency.key': HOSTILE_KEY,
        'http.request.resend_count': send,
        'server.address': '<img src=x onerror=alert(7)>',
        ...(send === 0
          ? { 'error.type': '<img src=x onerror=alert(8)>' }
          : { 'http.response.status_code': 201 }),
      }),
      events: [],
      resource: client,
      scope,
    });
    spans.push({
      traceId: trace,
      spanId: hex(0x200 + send, 16),
      parentSpanId: clientId,
      name: 'POST /payments',
      kind: SpanKind.SERVER,
      startTimeUnixMillis: start + 1,
      endTimeUnixMillis: start + 300,
      status: { code: StatusCode.UNSET, message: '' },
      attributes: attributes({
        'idempotency.key': HOSTILE_KEY,
        'idempotency.outcome': 'miss',
        'idempotency.scope': 'node',
        'idempotency.store': `${HOSTILE_STORE_PREFIX}${node}`,
        'tenant.id': '<img src=x onerror=alert(9)>',
        'http.route': HOSTILE_ROUTE,
      }),
      events: [],
      resource: server,
      scope,
    });
  });
  return spans;
}
