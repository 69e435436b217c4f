import { carriesKey, createAttributes } from './attributes.ts';
import {
  type DecodedTraces,
  type DecodeOptions,
  keyedNotLinkedKeys,
  keyedOnlyKeys,
  resolveDecodeOptions,
} from './decode-options.ts';
import {
  asObject,
  enumValue,
  id,
  type JsonObject,
  JsonRequestReader,
  list,
  optionalId,
  optionalObject,
  parseJsonPayload,
  string,
  time,
  withPath,
} from './json-reader.ts';
import type {
  Attributes,
  InstrumentationScope,
  Resource,
  Span,
  SpanEvent,
  SpanKind,
  StatusCode,
} from './span.ts';

/**
 * Decodes an OTLP/JSON `ExportTraceServiceRequest` (the OTLP specification's JSON mapping of the
 * protobuf messages) into the same spans `decodeTraces` gives for the protobuf form:
 *
 * - trace and span ids are hex strings (either case); the same id rules as the protobuf decoder
 *   apply (wrong length or missing: OTLP_ID_LENGTH; all zeros: OTLP_ID_ZERO; an empty or all-zero
 *   parent is a root span);
 * - enums are integers or their proto names (`SPAN_KIND_SERVER`, `STATUS_CODE_ERROR`); integers
 *   outside the known values become UNSPECIFIED / UNSET, unknown names are refused;
 * - field names are lowerCamelCase or, as protobuf's JSON parsers also accept, snake_case;
 * - int64 and fixed64 fields (times, intValue) are decimal strings or JSON numbers; a time outside
 *   the unsigned 64-bit range (a string above 2⁶⁴ − 1, a negative number, 1e300) is OTLP_TIME_RANGE;
 * - doubleValue is a number or "NaN" / "Infinity" / "-Infinity" / a numeric string;
 * - bytesValue is base64 (standard or URL-safe alphabet, padding optional);
 * - null means "not set"; unknown fields are ignored.
 *
 * Malformed input fails with OTLP_JSON (naming the path of the offending field), OTLP_UTF8 for
 * bytes that are not UTF-8, or the id, time and nesting codes above.
 */
export function decodeTracesJson(input: string | Uint8Array, options?: DecodeOptions): Span[] {
  return decodeTraceRequestJson(input, options).spans;
}

/** Like `decodeTracesJson`, with the number of spans the request held, returned or not (see `unkeyedKinds`). */
export function decodeTraceRequestJson(input: string | Uint8Array, options?: DecodeOptions): DecodedTraces {
  const resolved = resolveDecodeOptions(options);
  const root = parseJsonPayload(input);
  const decoder = new JsonTraceDecoder(resolved);
  const spans = decoder.request(root);
  return { spans, spanCount: decoder.spanCount };
}

/** A span's attributes without the `dropped` keys (itself when it has none of them). */
function without(attributes: Attributes, dropped: ReadonlySet<string>): Attributes {
  const isDropped = (key: string) => dropped.has(key);
  const keys = Object.keys(attributes);
  if (!keys.some(isDropped)) return attributes;
  const kept = createAttributes();
  for (const key of keys) if (!isDropped(key)) kept[key] = attributes[key]!;
  return kept;
}

const SPAN_KINDS: Record<string, SpanKind> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
  SPAN_KIND_PRODUCER: 4,
  SPAN_KIND_CONSUMER: 5,
};
const STATUS_CODES: Record<string, StatusCode> = {
  STATUS_CODE_UNSET: 0,
  STATUS_CODE_OK: 1,
  STATUS_CODE_ERROR: 2,
};

class JsonTraceDecoder extends JsonRequestReader {
  private readonly spans: Span[] = [];
  /** Spans read, returned or not. */
  spanCount = 0;

  request(root: unknown): Span[] {
    const request = asObject(root, 'payload');
    const resourceSpans = list(request, 'resourceSpans', 'resource_spans');
    for (let i = 0; i < resourceSpans.length; i++) {
      try {
        this.resourceSpans(asObject(resourceSpans[i], 'item'));
      } catch (error) {
        throw withPath(error, `resourceSpans[${i}]`);
      }
    }
    return this.spans;
  }

  private resourceSpans(message: JsonObject): void {
    const resource = this.resource(message);
    const scopeSpans = list(message, 'scopeSpans', 'scope_spans');
    for (let i = 0; i < scopeSpans.length; i++) {
      try {
        this.scopeSpans(asObject(scopeSpans[i], 'item'), resource);
      } catch (error) {
        throw withPath(error, `scopeSpans[${i}]`);
      }
    }
  }

  private scopeSpans(message: JsonObject, resource: Resource): void {
    const scope = this.scope(message);
    const spans = list(message, 'spans', 'spans');
    for (let i = 0; i < spans.length; i++) {
      try {
        const span = this.span(asObject(spans[i], 'item'), resource, scope);
        if (span !== null) this.spans.push(span);
      } catch (error) {
        throw withPath(error, `spans[${i}]`);
      }
    }
  }

  /** The span, checked whole; null when the options leave it out (see `unkeyedKinds`). */
  private span(message: JsonObject, resource: Resource, scope: InstrumentationScope): Span | null {
    let traceId = id(message, 'traceId', 'trace_id', 'trace id', 16);
    let spanId = id(message, 'spanId', 'span_id', 'span id', 8);
    let parentSpanId = optionalId(message, 'parentSpanId', 'parent_span_id', 'parent span id', 8);
    let name = string(message, 'name', 'name');
    let attributes: Attributes = createAttributes();
    this.attributes(message, attributes, this.options.spanKeys);
    const selection = this.options.spanSelection;
    const keyed =
      selection === null ||
      carriesKey(attributes, selection.keys) ||
      carriesKey(resource.attributes, selection.keys);
    const events: SpanEvent[] = [];
    if (this.options.events) {
      const eventList = list(message, 'events', 'events');
      for (let i = 0; i < eventList.length; i++) {
        try {
          events.push(this.event(asObject(eventList[i], 'item')));
        } catch (error) {
          throw withPath(error, `events[${i}]`);
        }
      }
    }
    const statusMessage = optionalObject(message, 'status', 'status');
    const status = {
      code:
        statusMessage === undefined
          ? (0 as StatusCode)
          : enumValue(statusMessage, 'code', 'code', STATUS_CODES, 2),
      message: statusMessage === undefined ? '' : string(statusMessage, 'message', 'message'),
    };
    const kind = enumValue(message, 'kind', 'kind', SPAN_KINDS, 5);
    const startTimeUnixMillis = time(message, 'startTimeUnixNano', 'start_time_unix_nano');
    const endTimeUnixMillis = time(message, 'endTimeUnixNano', 'end_time_unix_nano');
    this.spanCount++;
    if (!keyed) {
      if (status.code === 2 && ((this.options.failedKindMask >>> kind) & 1) !== 0) {
        // A failed span of `failedKinds`: returned with its ids and its link attributes.
        attributes = without(attributes, keyedNotLinkedKeys(selection));
      } else {
        if (((this.options.unkeyedKindMask >>> kind) & 1) === 0) return null;
        // Checked above, but not kept: a keyed selection's spans without a key go without them.
        attributes = without(attributes, keyedOnlyKeys(selection));
        traceId = '';
        spanId = '';
        parentSpanId = '';
        name = '';
      }
    }
    return {
      traceId,
      spanId,
      parentSpanId,
      name,
      kind,
      startTimeUnixMillis,
      endTimeUnixMillis,
      status,
      attributes,
      events,
      resource,
      scope,
    };
  }

  private event(message: JsonObject): SpanEvent {
    const attributes: Attributes = createAttributes();
    this.attributes(message, attributes, null);
    return {
      name: string(message, 'name', 'name'),
      timeUnixMillis: time(message, 'timeUnixNano', 'time_unix_nano'),
      attributes,
    };
  }
}
