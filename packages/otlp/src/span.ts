/**
 * keyscope's span: what the later stages (attempts, detector) consume, decoded from OTLP protobuf
 * or JSON. It keeps only what keyscope reads; links, trace state, flags and dropped counts are
 * skipped by the decoders.
 *
 * Value mapping from OTLP `AnyValue`:
 * - string → string; bool → boolean; double → number;
 * - int → number when it is a safe integer, otherwise bigint (so 5 and 5.0 are both `5`);
 * - bytes → Uint8Array; array → AttributeValue[]; kvlist → Attributes;
 * - an AnyValue with no value set → null.
 *
 * Spans are read-only to consumers: what spans share is frozen (resources; under a key filter the
 * empty attributes object, the empty events list, and message-less statuses).
 *
 * Attribute objects never inherit from `Object.prototype`: keys come from the sender, and a key such
 * as `__proto__` must be an ordinary own property, never a prototype change. The decoders create
 * them with `createAttributes()` (a frozen, empty, null-prototype object as prototype, which keeps
 * V8's fast property mode); `Object.create(null)` objects satisfy the same contract.
 */
export type AttributeValue =
  | string
  | boolean
  | number
  | bigint
  | Uint8Array
  | null
  | AttributeValue[]
  | Attributes;

export interface Attributes {
  [key: string]: AttributeValue;
}

/** OTLP `Span.SpanKind` numbering. */
export const SpanKind = {
  UNSPECIFIED: 0,
  INTERNAL: 1,
  SERVER: 2,
  CLIENT: 3,
  PRODUCER: 4,
  CONSUMER: 5,
} as const;
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];

/** OTLP `Status.StatusCode` numbering. */
export const StatusCode = { UNSET: 0, OK: 1, ERROR: 2 } as const;
export type StatusCode = (typeof StatusCode)[keyof typeof StatusCode];

export interface SpanStatus {
  code: StatusCode;
  message: string;
}

/**
 * Shared by every span of one `ResourceSpans`, and by every later request that carries the same
 * encoded resource (the protobuf decoder keeps a bounded cache): never copied per span, frozen.
 */
export interface Resource {
  attributes: Attributes;
}

/** Shared by every span of one `ScopeSpans`. */
export interface InstrumentationScope {
  name: string;
  version: string;
}

export interface SpanEvent {
  name: string;
  /** Unix epoch milliseconds; fractional, to microsecond precision. */
  timeUnixMillis: number;
  attributes: Attributes;
}

/**
 * One decoded span. Under a `KeyedAttributeSelection` (decode-options.ts), a span that carries no
 * key has '' for its trace id, span id, parent span id and name, unless it failed and its kind is
 * one of the selection's `failedKinds`.
 */
export interface Span {
  /** 32 lowercase hex characters. */
  traceId: string;
  /** 16 lowercase hex characters. */
  spanId: string;
  /** 16 lowercase hex characters, or '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: SpanKind;
  /** Unix epoch milliseconds; fractional, to microsecond precision. */
  startTimeUnixMillis: number;
  endTimeUnixMillis: number;
  status: SpanStatus;
  attributes: Attributes;
  events: SpanEvent[];
  resource: Resource;
  scope: InstrumentationScope;
}
