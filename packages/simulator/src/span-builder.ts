import {
  type Attributes,
  type InstrumentationScope,
  type Span,
  type SpanEvent,
  SpanKind,
  StatusCode,
} from '@keyscope/otlp';
import type { DedupOutcome } from './dedup-store.ts';
import type { DedupScope } from './scenario.ts';
import type { SimNode } from './topology.ts';

/**
 * Builds spans the way the usual Node.js instrumentations emit them (HTTP semantic conventions
 * 1.2x: `http.request.method`, `url.full`, `http.response.status_code`, captured headers as string
 * arrays), plus the `idempotency.*` attributes of docs/design.md recorded by the application.
 */

/** Shared by every HTTP span, as one `ScopeSpans` would be. */
export const HTTP_SCOPE: InstrumentationScope = Object.freeze({
  name: '@opentelemetry/instrumentation-http',
  version: '0.200.0',
});
export const PG_SCOPE: InstrumentationScope = Object.freeze({
  name: '@opentelemetry/instrumentation-pg',
  version: '0.52.0',
});

export const IDEMPOTENCY_KEY_HEADER = 'http.request.header.idempotency-key';

/** Times are kept to microseconds, as keyscope's span keeps them; truth uses the same rounding. */
export function micros(t: number): number {
  return Math.round(t * 1000) / 1000;
}

interface SpanBase {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  node: SimNode;
  startUnixMillis: number;
  endUnixMillis: number;
}

/**
 * Shared by every span without events or without an error: frozen, so a consumer that tries to
 * change one span's copy fails loudly instead of changing them all. Spares two objects per span.
 */
const NO_EVENTS = Object.freeze([]) as unknown as SpanEvent[];
const UNSET_STATUS = Object.freeze({ code: StatusCode.UNSET, message: '' }) as Span['status'];

function span(
  base: SpanBase,
  name: string,
  kind: Span['kind'],
  scope: InstrumentationScope,
  attributes: Attributes,
  error: string | undefined,
  events: SpanEvent[] = NO_EVENTS,
): Span {
  return {
    traceId: base.traceId,
    spanId: base.spanId,
    parentSpanId: base.parentSpanId,
    name,
    kind,
    startTimeUnixMillis: micros(base.startUnixMillis),
    endTimeUnixMillis: micros(base.endUnixMillis),
    status: error === undefined ? UNSET_STATUS : { code: StatusCode.ERROR, message: error },
    attributes,
    events,
    resource: base.node.resource,
    scope,
  };
}

function exceptionEvent(t: number, type: string, message: string): SpanEvent {
  return {
    name: 'exception',
    timeUnixMillis: micros(t),
    attributes: { 'exception.type': type, 'exception.message': message },
  };
}

export interface InboundRequest extends SpanBase {
  method: 'GET' | 'POST';
  route: string;
  path: string;
  serverAddress: string;
  serverPort: number;
  clientAddress: string;
  userAgent: string;
  statusCode: number;
  /** Present on mutations: the captured `Idempotency-Key` header. */
  key?: string;
  /** Dedup decision recorded on the SERVER span itself (`decisionOn: 'server_span'`). */
  decision?: DecisionAttributes;
  /** The caller's own attribute, on spans where the application records the tenant. */
  tenant?: string;
  errorMessage?: string;
  /** `idempotency.effect` and `idempotency.released`, where the service records them. */
  effect?: EffectAttributes;
}

export interface EffectAttributes {
  effect: 'committed' | 'none';
  released: boolean;
}

/** A SERVER span: the user's request at the caller, or a call arriving at a service. */
export function serverSpan(request: InboundRequest): Span {
  const attributes: Attributes = {
    'http.request.method': request.method,
    'http.route': request.route,
    'url.path': request.path,
    'url.scheme': 'https',
    'server.address': request.serverAddress,
    'server.port': request.serverPort,
    'client.address': request.clientAddress,
    'network.peer.address': request.clientAddress,
    'network.protocol.version': '1.1',
    'user_agent.original': request.userAgent,
    'http.response.status_code': request.statusCode,
  };
  if (request.key !== undefined) attributes[IDEMPOTENCY_KEY_HEADER] = [request.key];
  if (request.tenant !== undefined) attributes['tenant.id'] = request.tenant;
  if (request.decision) Object.assign(attributes, decisionAttributes(request.decision));
  if (request.effect) {
    attributes['idempotency.effect'] = request.effect.effect;
    attributes['idempotency.released'] = request.effect.released;
  }
  const failed = request.statusCode >= 500;
  if (failed) attributes['error.type'] = String(request.statusCode);
  const events = failed
    ? [exceptionEvent(request.endUnixMillis - 0.2, 'Error', request.errorMessage ?? 'internal error')]
    : NO_EVENTS;
  return span(
    request,
    `${request.method} ${request.route}`,
    SpanKind.SERVER,
    HTTP_SCOPE,
    attributes,
    failed ? (request.errorMessage ?? '') : undefined,
    events,
  );
}

export interface OutboundRequest extends SpanBase {
  method: 'GET' | 'POST';
  url: string;
  serverAddress: string;
  serverPort: number;
  /** The address the connection reached (a node, or a proxy); undefined when nothing answered. */
  peerAddress: string | undefined;
  /** 0 for the first send; the attribute is written only for resends. */
  resendCount: number;
  /** Undefined when no response arrived. */
  statusCode: number | undefined;
  /** `timeout`, `ECONNRESET` / `ECONNREFUSED`, or the status code as a string for HTTP errors. */
  errorType: string | undefined;
  key?: string;
  timeoutMillis: number;
}

/** A CLIENT span: one send of a request. */
export function clientSpan(request: OutboundRequest): Span {
  const attributes: Attributes = {
    'http.request.method': request.method,
    'url.full': request.url,
    'server.address': request.serverAddress,
    'server.port': request.serverPort,
    'network.protocol.version': '1.1',
  };
  if (request.peerAddress !== undefined) {
    attributes['network.peer.address'] = request.peerAddress;
    attributes['network.peer.port'] = request.serverPort;
  }
  if (request.resendCount > 0) attributes['http.request.resend_count'] = request.resendCount;
  if (request.statusCode !== undefined) attributes['http.response.status_code'] = request.statusCode;
  if (request.key !== undefined) attributes[IDEMPOTENCY_KEY_HEADER] = [request.key];
  let message: string | undefined;
  let events = NO_EVENTS;
  if (request.errorType !== undefined) {
    attributes['error.type'] = request.errorType;
    if (request.errorType === 'timeout') {
      message = `request to ${request.serverAddress} timed out after ${request.timeoutMillis} ms`;
      events = [exceptionEvent(request.endUnixMillis, 'TimeoutError', message)];
    } else if (request.errorType === 'ECONNREFUSED' || request.errorType === 'ECONNRESET') {
      // As Node.js words them: the connect refused, or the socket reset while reading the response.
      message =
        request.errorType === 'ECONNREFUSED'
          ? `connect ECONNREFUSED ${request.peerAddress ?? request.serverAddress}:${request.serverPort}`
          : 'read ECONNRESET';
      events = [exceptionEvent(request.endUnixMillis, 'Error', message)];
    } else {
      message = `HTTP ${request.errorType}`;
    }
  }
  return span(request, request.method, SpanKind.CLIENT, HTTP_SCOPE, attributes, message, events);
}

export interface DecisionAttributes {
  key: string;
  outcome: DedupOutcome;
  /** Undefined when the service does not record it (consumers derive it). */
  store: string | undefined;
  scope: DedupScope;
  tenant: string;
}

function decisionAttributes(decision: DecisionAttributes): Attributes {
  const attributes: Attributes = {
    'idempotency.key': decision.key,
    'idempotency.outcome': decision.outcome,
    'idempotency.scope': decision.scope,
    'tenant.id': decision.tenant,
  };
  if (decision.store !== undefined) attributes['idempotency.store'] = decision.store;
  return attributes;
}

export interface DedupCheck extends SpanBase {
  decision: DecisionAttributes;
  /**
   * The route of the request being deduplicated. The application copies it onto the check span
   * because the operation names the dedup tier and an INTERNAL span has no route of its own.
   */
  route: string;
  scope: InstrumentationScope;
  storeAddress: string;
}

/** The application's INTERNAL span around the store lookup (a Redis `SET NX` or equivalent). */
export function decisionSpan(check: DedupCheck): Span {
  const attributes: Attributes = {
    ...decisionAttributes(check.decision),
    'http.route': check.route,
    'db.system.name': 'redis',
    'db.operation.name': 'SET',
    'server.address': check.storeAddress,
    'server.port': 6379,
  };
  const failed = check.decision.outcome === 'error';
  if (failed) attributes['error.type'] = 'StoreUnavailableError';
  const message = failed ? 'idempotency store unavailable' : undefined;
  const events = failed
    ? [exceptionEvent(check.endUnixMillis, 'StoreUnavailableError', message!)]
    : NO_EVENTS;
  return span(check, 'idempotency.check', SpanKind.INTERNAL, check.scope, attributes, message, events);
}

export interface DatabaseQuery extends SpanBase {
  database: string;
  table: string;
  serverAddress: string;
  peerAddress: string;
  rows: number;
}

/** A pg-instrumentation CLIENT span: the read behind a GET. */
export function databaseSpan(query: DatabaseQuery): Span {
  return span(
    query,
    `SELECT ${query.table}`,
    SpanKind.CLIENT,
    PG_SCOPE,
    {
      'db.system.name': 'postgresql',
      'db.namespace': query.database,
      'db.operation.name': 'SELECT',
      'db.collection.name': query.table,
      'db.query.text': `SELECT * FROM ${query.table} WHERE id = $1`,
      'db.response.returned_rows': query.rows,
      'server.address': query.serverAddress,
      'server.port': 5432,
      'network.peer.address': query.peerAddress,
      'network.peer.port': 5432,
    },
    undefined,
  );
}

/** Application work of the service's own scope: a redrive job's root, a page render. */
export function internalSpan(
  base: SpanBase,
  name: string,
  scope: InstrumentationScope,
  attributes: Attributes,
): Span {
  return span(base, name, SpanKind.INTERNAL, scope, attributes, undefined);
}

/** The name of the span around a charge, as the mapping's `sideEffectSpans` names it. */
export const SIDE_EFFECT_SPAN_NAME = 'ledger.charge';

/** The application's INTERNAL span around the side effect (a charge that committed), with the key. */
export function sideEffectSpan(base: SpanBase, key: string, scope: InstrumentationScope): Span {
  return span(base, SIDE_EFFECT_SPAN_NAME, SpanKind.INTERNAL, scope, { 'idempotency.key': key }, undefined);
}
