import type { LogRecord } from './log-record.ts';
import {
  type AttributeValue,
  type Resource,
  type Span,
  type SpanEvent,
  SpanKind,
  type SpanStatus,
} from './span.ts';

const UNSET_STATUS: SpanStatus = Object.freeze({ code: 0, message: '' });
const NO_EVENTS: SpanEvent[] = Object.freeze([]) as unknown as SpanEvent[];

/**
 * Log records as the later stages read them: each one the INTERNAL span of the event it records,
 * so that a record stating an idempotency decision (a key and an outcome, under the same mapping
 * as spans) is a decision, as a decision span would be. Its attributes, resource and scope are the
 * record's; it starts and ends at the record's time (its observed time when it has none); its name
 * is the record's event name; its status is UNSET.
 *
 * Its ids make redelivery and double recording harmless:
 * - a record logged inside a span (trace id and span id) is a child of that span, with span id
 *   `loggedSpanId(traceId, spanId)`: the same for every record logged in that span, so a decision
 *   logged twice in one span, or a record sent again, is one attempt (the attempt log refuses the
 *   second by trace and span id). A request span that only carries the key reads the logged
 *   decision as it reads a decision child span. Where the same decision is also recorded by a span,
 *   the detector counts it once (`isLoggedDecision` in @keyscope/attempts);
 * - a record outside a span gets ids derived from what it says (times, severity, event name, body,
 *   attributes, resource, scope): a record sent again has the same ids, two different records
 *   different ones. A record with a trace id and no span id keeps its trace id.
 *
 * `records` is only read; the spans share the records' attribute objects and resources.
 */
export function spansOfLogRecords(records: readonly LogRecord[]): Span[] {
  const spans: Span[] = new Array(records.length);
  for (let i = 0; i < records.length; i++) spans[i] = logRecordSpan(records[i]!);
  return spans;
}

export function logRecordSpan(record: LogRecord): Span {
  let traceId = record.traceId;
  let spanId: string;
  let parentSpanId = '';
  if (traceId !== '' && record.spanId !== '') {
    spanId = loggedSpanId(traceId, record.spanId);
    parentSpanId = record.spanId;
  } else {
    const text = fingerprint(record);
    if (traceId === '') traceId = hashHex(text, TRACE_ID_SEEDS);
    spanId = hashHex(text, SPAN_ID_SEEDS);
  }
  const time = record.timeUnixMillis !== 0 ? record.timeUnixMillis : record.observedTimeUnixMillis;
  return {
    traceId,
    spanId,
    parentSpanId,
    name: record.eventName,
    kind: SpanKind.INTERNAL,
    startTimeUnixMillis: time,
    endTimeUnixMillis: time,
    status: UNSET_STATUS,
    attributes: record.attributes,
    events: NO_EVENTS,
    resource: record.resource,
    scope: record.scope,
  };
}

/**
 * The span id of what was logged in span `spanId` of trace `traceId` (16 lowercase hex
 * characters), the same for every record logged there. A span whose id is
 * `loggedSpanId(traceId, parentSpanId)` is, short of a 64-bit hash collision, a log record's.
 */
export function loggedSpanId(traceId: string, spanId: string): string {
  return hashHex(`${traceId}/${spanId}`, LOGGED_SPAN_ID_SEEDS);
}

// FNV-1a, 32 bits per lane, each lane from its own offset basis: ids, not secrets (a sender who
// wants two records to share ids can simply send one twice).
const LOGGED_SPAN_ID_SEEDS = [0x811c9dc5, 0x050c5d1f];
const SPAN_ID_SEEDS = [0x2166136b, 0x3f1a9c4d];
const TRACE_ID_SEEDS = [0x6b43a9b5, 0x1d2e3f40, 0x7a5b6c8d, 0x0f1e2d3c];

function hashHex(text: string, seeds: readonly number[]): string {
  let hex = '';
  for (const seed of seeds) {
    let hash = seed;
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    hex += (hash >>> 0).toString(16).padStart(8, '0');
  }
  // An all-zero id is invalid in OTLP; one hash in 2^64 would give it.
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

/** Resources are shared by many records: their text is built once. */
const resourceTexts = new WeakMap<Resource, string>();

function fingerprint(record: LogRecord): string {
  let resource = resourceTexts.get(record.resource);
  if (resource === undefined) {
    resource = canonical(record.resource.attributes);
    resourceTexts.set(record.resource, resource);
  }
  return [
    record.traceId,
    record.timeUnixMillis,
    record.observedTimeUnixMillis,
    record.severityNumber,
    JSON.stringify(record.severityText),
    JSON.stringify(record.eventName),
    record.body === null ? 'null' : JSON.stringify(record.body),
    canonical(record.attributes),
    resource,
    JSON.stringify(record.scope.name),
    JSON.stringify(record.scope.version),
  ].join('|');
}

/** A text that two equal values share whatever the order of their keys. */
function canonical(value: AttributeValue): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'bigint':
      return `${value}n`;
    case 'number':
    case 'boolean':
      return String(value);
  }
  if (value instanceof Uint8Array) return `b${Buffer.from(value).toString('base64')}`;
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key]!)}`).join(',')}}`;
}
