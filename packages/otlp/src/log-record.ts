import type { Attributes, InstrumentationScope, Resource } from './span.ts';

/**
 * keyscope's log record: what the decoders of OTLP logs give (decode-logs-protobuf.ts,
 * decode-logs-json.ts). Attribute values map from `AnyValue` as span attributes do (span.ts), and
 * records of one ResourceLogs share one frozen `Resource`, of one ScopeLogs one
 * `InstrumentationScope`. keyscope reads a record as the span of the decision it states
 * (log-record-spans.ts); flags and dropped counts are skipped.
 *
 * Ids are optional in OTLP logs: a record logged outside a trace has neither. The OTLP
 * specification reads an all-zero id as no id, and so does keyscope; an id of the wrong length
 * fails the payload (KS_OTLP_ID_LENGTH), as it does for spans.
 */
export interface LogRecord {
  /** 32 lowercase hex characters; '' when the record is not part of a trace. */
  traceId: string;
  /** 16 lowercase hex characters: the span it was logged in; '' when none. */
  spanId: string;
  /** When the event took place, Unix epoch milliseconds (fractional, to microseconds); 0 when unset. */
  timeUnixMillis: number;
  /** When the SDK or collector first saw it; 0 when unset. */
  observedTimeUnixMillis: number;
  /** OTLP `SeverityNumber`: 1 (TRACE) to 24 (FATAL4); 0 when unset or outside that range. */
  severityNumber: number;
  severityText: string;
  /** The body when it is a string; null when it is absent or another kind of value. */
  body: string | null;
  /** `event_name`; '' when the record names no event. */
  eventName: string;
  attributes: Attributes;
  resource: Resource;
  scope: InstrumentationScope;
}

/** A request's decoded log records, and how many it held (returned or not: see the decoders). */
export interface DecodedLogs {
  readonly records: LogRecord[];
  readonly recordCount: number;
}

/** The highest `SeverityNumber` OTLP defines (FATAL4). */
export const MAX_SEVERITY_NUMBER = 24;
