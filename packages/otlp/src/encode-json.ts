import type { Attributes, AttributeValue, Span } from './span.ts';
import { groupSpans } from './span-groups.ts';
import { microsFromMillis, nanoStringFromMicros } from './time.ts';

/**
 * The OTLP/JSON `ExportTraceServiceRequest` object for `spans` (pass it to `JSON.stringify`):
 * lowerCamelCase names, hex ids, enums as integers, int64 and fixed64 as decimal strings, bytes as
 * base64, NaN/±Infinity doubles as the strings protobuf JSON uses. Grouping, time precision and
 * value mapping are those of `encodeTraces`.
 */
export function encodeTracesJson(spans: readonly Span[]): object {
  const resourceSpans: object[] = [];
  for (const [resource, scopes] of groupSpans(spans)) {
    const scopeSpans: object[] = [];
    for (const [scope, members] of scopes) {
      scopeSpans.push({ scope: { name: scope.name, version: scope.version }, spans: members.map(spanJson) });
    }
    resourceSpans.push({ resource: { attributes: attributesJson(resource.attributes, 0) }, scopeSpans });
  }
  return { resourceSpans };
}

function spanJson(span: Span): object {
  checkId('traceId', span.traceId, 32);
  checkId('spanId', span.spanId, 16);
  if (span.parentSpanId !== '') checkId('parentSpanId', span.parentSpanId, 16);
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    name: span.name,
    kind: span.kind,
    startTimeUnixNano: nanoStringFromMicros(microsFromMillis(span.startTimeUnixMillis)),
    endTimeUnixNano: nanoStringFromMicros(microsFromMillis(span.endTimeUnixMillis)),
    attributes: attributesJson(span.attributes, 0),
    events: span.events.map((event) => ({
      timeUnixNano: nanoStringFromMicros(microsFromMillis(event.timeUnixMillis)),
      name: event.name,
      attributes: attributesJson(event.attributes, 0),
    })),
    status: { code: span.status.code, message: span.status.message },
  };
}

const HEX = /^[0-9a-f]*$/;

export function checkId(name: string, hex: string, length: number): void {
  if (hex.length !== length || !HEX.test(hex)) {
    throw new TypeError(`${name} must be ${length} lowercase hex characters, received '${hex}'`);
  }
}

/** Bounds the recursion on cyclic or absurdly deep values, which the decoders would refuse anyway. */
const MAX_ENCODE_DEPTH = 1000;

export function attributesJson(attributes: Attributes, depth: number): object[] {
  const out: object[] = [];
  for (const key in attributes) out.push({ key, value: anyValueJson(attributes[key]!, depth) });
  return out;
}

function anyValueJson(value: AttributeValue, depth: number): object {
  if (depth > MAX_ENCODE_DEPTH) throw new RangeError(`attribute values nest deeper than ${MAX_ENCODE_DEPTH}`);
  switch (typeof value) {
    case 'string':
      return { stringValue: value };
    case 'boolean':
      return { boolValue: value };
    case 'number':
      if (Number.isSafeInteger(value) && !Object.is(value, -0)) return { intValue: String(value) };
      // JSON numbers cannot say NaN, ±Infinity or -0; protobuf JSON's string forms can.
      if (Object.is(value, -0)) return { doubleValue: '-0' };
      return { doubleValue: Number.isFinite(value) ? value : String(value) };
    case 'bigint':
      if (BigInt.asIntN(64, value) !== value)
        throw new RangeError(`int attribute ${value} does not fit in int64`);
      return { intValue: value.toString() };
    default:
      if (value === null) return {};
      if (value instanceof Uint8Array) return { bytesValue: Buffer.from(value).toString('base64') };
      if (Array.isArray(value)) {
        return { arrayValue: { values: value.map((item) => anyValueJson(item, depth + 1)) } };
      }
      return { kvlistValue: { values: attributesJson(value, depth + 1) } };
  }
}
