import { bytesOfHex } from './hex.ts';
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
    const resourceSpans = w.beginMessage(1);
    const resourceMessage = w.beginMessage(1);
    writeAttributes(w, 1, resource.attributes, 0);
    w.endMessage(resourceMessage);
    for (const [scope, members] of scopes) {
      const scopeSpans = w.beginMessage(2);
      const scopeMessage = w.beginMessage(1);
      if (scope.name !== '') w.stringField(1, scope.name);
      if (scope.version !== '') w.stringField(2, scope.version);
      w.endMessage(scopeMessage);
      for (const span of members) writeSpan(w, span);
      w.endMessage(scopeSpans);
    }
    w.endMessage(resourceSpans);
  }
  return w.finish();
}

function writeSpan(w: WireWriter, span: Span): void {
  const message = w.beginMessage(2);
  w.bytesField(1, idBytes('traceId', span.traceId, 16));
  w.bytesField(2, idBytes('spanId', span.spanId, 8));
  if (span.parentSpanId !== '') w.bytesField(4, idBytes('parentSpanId', span.parentSpanId, 8));
  if (span.name !== '') w.stringField(5, span.name);
  if (span.kind !== 0) {
    w.tag(6, 0);
    w.varint(span.kind);
  }
  w.tag(7, 1);
  w.fixed64Micros(microsFromMillis(span.startTimeUnixMillis));
  w.tag(8, 1);
  w.fixed64Micros(microsFromMillis(span.endTimeUnixMillis));
  writeAttributes(w, 9, span.attributes, 0);
  for (const event of span.events) {
    const eventMessage = w.beginMessage(11);
    w.tag(1, 1);
    w.fixed64Micros(microsFromMillis(event.timeUnixMillis));
    if (event.name !== '') w.stringField(2, event.name);
    writeAttributes(w, 3, event.attributes, 0);
    w.endMessage(eventMessage);
  }
  if (span.status.code !== 0 || span.status.message !== '') {
    const status = w.beginMessage(15);
    if (span.status.message !== '') w.stringField(2, span.status.message);
    if (span.status.code !== 0) {
      w.tag(3, 0);
      w.varint(span.status.code);
    }
    w.endMessage(status);
  }
  w.endMessage(message);
}

/** Bounds the recursion on cyclic or absurdly deep values, which the decoders would refuse anyway. */
const MAX_ENCODE_DEPTH = 1000;

function writeAttributes(w: WireWriter, field: number, attributes: Attributes, depth: number): void {
  for (const key in attributes) {
    const keyValue = w.beginMessage(field);
    w.stringField(1, key);
    writeAnyValue(w, 2, attributes[key]!, depth);
    w.endMessage(keyValue);
  }
}

function writeAnyValue(w: WireWriter, field: number, value: AttributeValue, depth: number): void {
  if (depth > MAX_ENCODE_DEPTH) throw new RangeError(`attribute values nest deeper than ${MAX_ENCODE_DEPTH}`);
  const message = w.beginMessage(field);
  switch (typeof value) {
    case 'string':
      w.stringField(1, value);
      break;
    case 'boolean':
      w.tag(2, 0);
      w.varint(value ? 1 : 0);
      break;
    case 'number':
      // -0 stays a double so it decodes as -0; a safe integer is int_value (span.ts: 5 and 5.0 are 5).
      if (Number.isSafeInteger(value) && !Object.is(value, -0)) {
        w.tag(3, 0);
        w.int64(value);
      } else {
        w.tag(4, 1);
        w.double(value);
      }
      break;
    case 'bigint':
      if (BigInt.asIntN(64, value) !== value)
        throw new RangeError(`int attribute ${value} does not fit in int64`);
      w.tag(3, 0);
      w.int64(value);
      break;
    default:
      if (value === null) break;
      if (value instanceof Uint8Array) w.bytesField(7, value);
      else if (Array.isArray(value)) {
        const array = w.beginMessage(5);
        for (const item of value) writeAnyValue(w, 1, item, depth + 1);
        w.endMessage(array);
      } else {
        const list = w.beginMessage(6);
        writeAttributes(w, 1, value, depth + 1);
        w.endMessage(list);
      }
  }
  w.endMessage(message);
}

function idBytes(name: string, hex: string, size: number): Uint8Array {
  const bytes = hex.length === size * 2 ? bytesOfHex(hex) : null;
  if (bytes === null) throw new TypeError(`${name} must be ${size * 2} hex characters, received '${hex}'`);
  return bytes;
}
