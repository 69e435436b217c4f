import {
  type Attributes,
  type AttributeValue,
  type Resource,
  type Span,
  SpanKind,
  StatusCode,
} from '@keyscope/otlp';

/**
 * Readable span builders for the attempts tests: `serverSpan({ key: 'k1', outcome: 'miss' })`.
 * Options name the default attributes; `attributes` adds or overrides raw ones. Attribute objects
 * get a null prototype, as the decoders produce them. Ids count up: trace `…0001`, span `…0001`.
 */
export interface SpanOptions {
  key?: string;
  outcome?: string;
  hit?: AttributeValue;
  store?: string;
  scope?: string;
  tenant?: string;
  route?: string;
  name?: string;
  statusCode?: number;
  error?: boolean;
  statusMessage?: string;
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
  startMillis?: number;
  durationMillis?: number;
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

let nextId = 1;

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

export function span(kind: SpanKind, options: SpanOptions = {}): Span {
  const id = nextId++;
  const start = options.startMillis ?? 1_700_000_000_000;
  return {
    traceId: options.traceId ?? id.toString(16).padStart(32, '0'),
    spanId: options.spanId ?? id.toString(16).padStart(16, '0'),
    parentSpanId: options.parentSpanId ?? '',
    name: options.name ?? 'POST /payments',
    kind,
    startTimeUnixMillis: start,
    endTimeUnixMillis: start + (options.durationMillis ?? 50),
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
    events: [],
    resource: options.resource ?? defaultResource,
    scope: { name: 'test', version: '' },
  };
}

export const serverSpan = (options?: SpanOptions): Span => span(SpanKind.SERVER, options);
export const clientSpan = (options?: SpanOptions): Span => span(SpanKind.CLIENT, options);
export const internalSpan = (options?: SpanOptions): Span => span(SpanKind.INTERNAL, options);
