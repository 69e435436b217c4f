import { bytesOfHex } from './hex.ts';
import {
  ANY_VALUE,
  ARRAY_VALUE,
  EXPORT_TRACE_SERVICE_REQUEST,
  INSTRUMENTATION_SCOPE,
  KEY_VALUE,
  KEY_VALUE_LIST,
  RESOURCE,
  RESOURCE_SPANS,
  SCOPE_SPANS,
  SPAN,
  SPAN_EVENT,
  STATUS,
} from './otlp-fields.ts';
import type { Attributes, AttributeValue, Span } from './span.ts';
import { groupSpans } from './span-groups.ts';
import { microsFromMillis } from './time.ts';
import { WireWriter } from './wire-writer.ts';

/**
 * Encodes keyscope spans as a protobuf `ExportTraceServiceRequest` (for the simulator, the demo,
 * benchmarks and tests; the pipeline itself only decodes).
 *
 * Spans are grouped by `resource` then `scope` object identity (see span-groups.ts), so they come
 * back from `decodeTraces` in grouped order; a batch that is already grouped round-trips to equal
 * spans. Times are sent as whole microseconds (see time.ts). Attribute values map as span.ts
 * describes, in reverse: a safe integer becomes int_value, any other number double_value, a bigint
 * int_value, null an empty AnyValue. Throws RangeError/TypeError for spans that cannot be encoded
 * (a malformed id, a negative time, a bigint outside int64): the spans are the caller's own.
 */
export function encodeTraces(spans: readonly Span[]): Uint8Array {
  const w = new WireWriter(Math.max(1024, spans.length * 512));
  for (const [resource, scopes] of groupSpans(spans)) {
    const resourceSpans = w.beginMessage(EXPORT_TRACE_SERVICE_REQUEST.tag.resourceSpans);
    const resourceMessage = w.beginMessage(RESOURCE_SPANS.tag.resource);
    writeAttributes(w, RESOURCE.tag.attributes, resource.attributes, 0);
    w.endMessage(resourceMessage);
    for (const [scope, members] of scopes) {
      const scopeSpans = w.beginMessage(RESOURCE_SPANS.tag.scopeSpans);
      const scopeMessage = w.beginMessage(SCOPE_SPANS.tag.scope);
      if (scope.name !== '') w.stringField(INSTRUMENTATION_SCOPE.tag.name, scope.name);
      if (scope.version !== '') w.stringField(INSTRUMENTATION_SCOPE.tag.version, scope.version);
      w.endMessage(scopeMessage);
      for (const span of members) writeSpan(w, span);
      w.endMessage(scopeSpans);
    }
    w.endMessage(resourceSpans);
  }
  return w.finish();
}

function writeSpan(w: WireWriter, span: Span): void {
  const message = w.beginMessage(SCOPE_SPANS.tag.spans);
  w.bytesField(SPAN.tag.traceId, idBytes('traceId', span.traceId, 16));
  w.bytesField(SPAN.tag.spanId, idBytes('spanId', span.spanId, 8));
  if (span.parentSpanId !== '')
    w.bytesField(SPAN.tag.parentSpanId, idBytes('parentSpanId', span.parentSpanId, 8));
  if (span.name !== '') w.stringField(SPAN.tag.name, span.name);
  if (span.kind !== 0) {
    w.tag(SPAN.tag.kind);
    w.varint(span.kind);
  }
  w.tag(SPAN.tag.startTimeUnixNano);
  w.fixed64Micros(microsFromMillis(span.startTimeUnixMillis));
  w.tag(SPAN.tag.endTimeUnixNano);
  w.fixed64Micros(microsFromMillis(span.endTimeUnixMillis));
  writeAttributes(w, SPAN.tag.attributes, span.attributes, 0);
  for (const event of span.events) {
    const eventMessage = w.beginMessage(SPAN.tag.events);
    w.tag(SPAN_EVENT.tag.timeUnixNano);
    w.fixed64Micros(microsFromMillis(event.timeUnixMillis));
    if (event.name !== '') w.stringField(SPAN_EVENT.tag.name, event.name);
    writeAttributes(w, SPAN_EVENT.tag.attributes, event.attributes, 0);
    w.endMessage(eventMessage);
  }
  if (span.status.code !== 0 || span.status.message !== '') {
    const status = w.beginMessage(SPAN.tag.status);
    if (span.status.message !== '') w.stringField(STATUS.tag.message, span.status.message);
    if (span.status.code !== 0) {
      w.tag(STATUS.tag.code);
      w.varint(span.status.code);
    }
    w.endMessage(status);
  }
  w.endMessage(message);
}

/** Bounds the recursion on cyclic or absurdly deep values, which the decoders would refuse anyway. */
const MAX_ENCODE_DEPTH = 1000;

/** Each attribute as a KeyValue in the LEN field tagged `fieldTag`. */
export function writeAttributes(
  w: WireWriter,
  fieldTag: number,
  attributes: Attributes,
  depth: number,
): void {
  for (const key in attributes) {
    const keyValue = w.beginMessage(fieldTag);
    w.stringField(KEY_VALUE.tag.key, key);
    writeAnyValue(w, KEY_VALUE.tag.value, attributes[key]!, depth);
    w.endMessage(keyValue);
  }
}

/** `value` as an AnyValue in the LEN field tagged `fieldTag`. */
function writeAnyValue(w: WireWriter, fieldTag: number, value: AttributeValue, depth: number): void {
  if (depth > MAX_ENCODE_DEPTH) throw new RangeError(`attribute values nest deeper than ${MAX_ENCODE_DEPTH}`);
  const message = w.beginMessage(fieldTag);
  switch (typeof value) {
    case 'string':
      w.stringField(ANY_VALUE.tag.stringValue, value);
      break;
    case 'boolean':
      w.tag(ANY_VALUE.tag.boolValue);
      w.varint(value ? 1 : 0);
      break;
    case 'number':
      // -0 stays a double so it decodes as -0; a safe integer is int_value (span.ts: 5 and 5.0 are 5).
      if (Number.isSafeInteger(value) && !Object.is(value, -0)) {
        w.tag(ANY_VALUE.tag.intValue);
        w.int64(value);
      } else {
        w.tag(ANY_VALUE.tag.doubleValue);
        w.double(value);
      }
      break;
    case 'bigint':
      if (BigInt.asIntN(64, value) !== value)
        throw new RangeError(`int attribute ${value} does not fit in int64`);
      w.tag(ANY_VALUE.tag.intValue);
      w.int64(value);
      break;
    default:
      if (value === null) break;
      if (value instanceof Uint8Array) w.bytesField(ANY_VALUE.tag.bytesValue, value);
      else if (Array.isArray(value)) {
        const array = w.beginMessage(ANY_VALUE.tag.arrayValue);
        for (const item of value) writeAnyValue(w, ARRAY_VALUE.tag.values, item, depth + 1);
        w.endMessage(array);
      } else {
        const list = w.beginMessage(ANY_VALUE.tag.kvlistValue);
        writeAttributes(w, KEY_VALUE_LIST.tag.values, value, depth + 1);
        w.endMessage(list);
      }
  }
  w.endMessage(message);
}

export function idBytes(name: string, hex: string, size: number): Uint8Array {
  const bytes = hex.length === size * 2 ? bytesOfHex(hex) : null;
  if (bytes === null) throw new TypeError(`${name} must be ${size * 2} hex characters, received '${hex}'`);
  return bytes;
}
