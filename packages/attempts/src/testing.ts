import {
  type Attributes,
  type AttributeValue,
  type Resource,
  type Span,
  type SpanEvent,
  SpanKind,
  StatusCode,
} from '@keyscope/otlp';

/**
 * Span builders for tests (`@keyscope/attempts/testing`; the service never imports it), carrying
 * the default span conventions this package reads: `serverSpan({ key: 'k1', outcome: 'miss' })`.
 * Every other test reaches them through `@keyscope/testkit`; they live here because testkit
 * depends on this package, whose own tests need them too.
 *
 * Options name the conventional attributes; `attributes` adds or overrides raw ones. Attribute
 * objects get a null prototype, as the decoders produce them. Every span is in trace `…0001`
 * unless told otherwise; span ids count up (`…0001`, `…0002`, …) unless `id` or `spanId` names one.
 */
export interface SpanOptions {
  /** SERVER unless set. */
  kind?: SpanKind;
  key?: string;
  outcome?: string;
  hit?: AttributeValue;
  store?: string;
  scope?: string;
  tenant?: string;
  route?: string;
  statusCode?: number;
  name?: string;
  /** Marks the span's status ERROR. */
  error?: boolean;
  statusMessage?: string;
  /** The trace id ends in this number: `trace: 2` → `…0002`. */
  trace?: number;
  /** The span id ends in this number: `id: 3` → `…0003`. */
  id?: number;
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  /** Start; the test epoch (2026-01-01T00:00:00Z) unless set. */
  startMillis?: number;
  /** 250 unless set; `endMillis` wins over it. */
  durationMillis?: number;
  endMillis?: number;
  events?: SpanEvent[];
  /** `resource({ service: 'payments', instance: 'payments-a-1' })` unless set. */
  resource?: Resource;
  attributes?: Record<string, AttributeValue>;
}

export interface ResourceOptions {
  service?: string;
  instance?: string;
  host?: string;
  cluster?: string;
  region?: string;
  zone?: string;
  attributes?: Record<string, AttributeValue>;
}

/** Where test time starts: 2026-01-01T00:00:00Z. */
export const TEST_EPOCH_UNIX_MILLIS = Date.UTC(2026, 0, 1);

let nextId = 1;

/** `n` as a hex id of `length` digits: `hexId(1, 16)` → `0000000000000001`. */
export function hexId(n: number, length: number): string {
  return n.toString(16).padStart(length, '0');
}

/** Attributes as the decoders produce them (null prototype); `undefined` values are left out. */
export function attributes(values: Record<string, AttributeValue | undefined>): Attributes {
  const result: Attributes = Object.create(null);
  for (const [name, value] of Object.entries(values)) if (value !== undefined) result[name] = value;
  return result;
}

export function resource(options: ResourceOptions = {}): Resource {
  return {
    attributes: attributes({
      'service.name': options.service ?? 'payments',
      'service.instance.id': options.instance,
      'host.name': options.host,
      'k8s.cluster.name': options.cluster,
      'cloud.region': options.region,
      'cloud.availability_zone': options.zone,
      ...options.attributes,
    }),
  };
}

const defaultResource = resource({ service: 'payments', instance: 'payments-a-1' });

export function span(options: SpanOptions = {}): Span {
  const counted = nextId++;
  const start = options.startMillis ?? TEST_EPOCH_UNIX_MILLIS;
  return {
    traceId: options.traceId ?? hexId(options.trace ?? 1, 32),
    spanId: options.spanId ?? hexId(options.id ?? counted, 16),
    parentSpanId: options.parentSpanId ?? '',
    name: options.name ?? 'POST /payments',
    kind: options.kind ?? SpanKind.SERVER,
    startTimeUnixMillis: start,
    endTimeUnixMillis: options.endMillis ?? start + (options.durationMillis ?? 250),
    status: {
      code: options.error ? StatusCode.ERROR : StatusCode.UNSET,
      message: options.statusMessage ?? '',
    },
    attributes: attributes({
      'idempotency.key': options.key,
      'idempotency.outcome': options.outcome,
      'idempotency.hit': options.hit,
      'idempotency.store': options.store,
      'idempotency.scope': options.scope,
      'tenant.id': options.tenant,
      'http.route': options.route,
      'http.response.status_code': options.statusCode,
      ...options.attributes,
    }),
    events: options.events ?? [],
    resource: options.resource ?? defaultResource,
    scope: { name: 'keyscope-test', version: '1.0.0' },
  };
}

export const serverSpan = (options?: SpanOptions): Span => span({ ...options, kind: SpanKind.SERVER });
export const clientSpan = (options?: SpanOptions): Span => span({ ...options, kind: SpanKind.CLIENT });
export const internalSpan = (options?: SpanOptions): Span => span({ ...options, kind: SpanKind.INTERNAL });
