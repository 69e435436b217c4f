import { createAttributes } from './attributes.ts';
import { type DecodedTraces, type DecodeOptions, resolveDecodeOptions } from './decode-options.ts';
import { hexOf8 } from './hex.ts';
import {
  EXPORT_TRACE_SERVICE_REQUEST,
  RESOURCE_SPANS,
  SCOPE_SPANS,
  SPAN,
  SPAN_EVENT,
  STATUS,
} from './otlp-fields.ts';
import {
  checkId,
  isZero,
  missingId,
  ProtobufDecoderState,
  ProtobufRequestReader,
  zeroId,
} from './request-reader.ts';
import type {
  Attributes,
  InstrumentationScope,
  Resource,
  Span,
  SpanEvent,
  SpanKind,
  SpanStatus,
  StatusCode,
} from './span.ts';

/*
 * The tags of the fields the decoder reads (otlp-fields.ts), as number constants of this module:
 * every field of every span is compared against several, and V8 compiles these as it does
 * literals (see request-reader.ts).
 */
const EXPORT_TRACE_SERVICE_REQUEST_RESOURCE_SPANS = EXPORT_TRACE_SERVICE_REQUEST.tag.resourceSpans;
const RESOURCE_SPANS_RESOURCE = RESOURCE_SPANS.tag.resource;
const RESOURCE_SPANS_SCOPE_SPANS = RESOURCE_SPANS.tag.scopeSpans;
const SCOPE_SPANS_SCOPE = SCOPE_SPANS.tag.scope;
const SCOPE_SPANS_SPANS = SCOPE_SPANS.tag.spans;
const SPAN_TRACE_ID = SPAN.tag.traceId;
const SPAN_SPAN_ID = SPAN.tag.spanId;
const SPAN_PARENT_SPAN_ID = SPAN.tag.parentSpanId;
const SPAN_NAME = SPAN.tag.name;
const SPAN_KIND = SPAN.tag.kind;
const SPAN_START_TIME_UNIX_NANO = SPAN.tag.startTimeUnixNano;
const SPAN_END_TIME_UNIX_NANO = SPAN.tag.endTimeUnixNano;
const SPAN_ATTRIBUTES = SPAN.tag.attributes;
const SPAN_EVENTS = SPAN.tag.events;
const SPAN_STATUS = SPAN.tag.status;
const SPAN_EVENT_TIME_UNIX_NANO = SPAN_EVENT.tag.timeUnixNano;
const SPAN_EVENT_NAME = SPAN_EVENT.tag.name;
const SPAN_EVENT_ATTRIBUTES = SPAN_EVENT.tag.attributes;
const STATUS_MESSAGE = STATUS.tag.message;
const STATUS_CODE = STATUS.tag.code;

/** What spans without attributes, events or a status message share; frozen, so no consumer can change them. */
const NO_ATTRIBUTES: Attributes = Object.freeze(createAttributes());
const NO_EVENTS: SpanEvent[] = Object.freeze([]) as unknown as SpanEvent[];
const STATUS_WITHOUT_MESSAGE: readonly SpanStatus[] = [0, 1, 2].map((code) =>
  Object.freeze({ code: code as StatusCode, message: '' }),
);

/**
 * Decodes protobuf `ExportTraceServiceRequest`s into keyscope spans, under the options it was
 * made with, one request at a time.
 *
 * Spans of one ResourceSpans share one `Resource` object and spans of one ScopeSpans share one
 * `InstrumentationScope` object. A resource whose encoded bytes this decoder decoded before is
 * the same frozen object as then: see resource-cache.ts. The result never aliases `bytes`, so the
 * caller may reuse it.
 *
 * Ids: the spec calls a trace or span id invalid when it is not 16/8 bytes or all zeros, and
 * keyscope deduplicates on (trace id, span id), so such a span cannot be handled; the payload is
 * refused with OTLP_ID_LENGTH / OTLP_ID_ZERO (a producer that writes one bad id writes them in
 * every batch, and a 400 surfaces that at the sender). A missing id counts as 0 bytes. An empty
 * parent span id means a root span; an all-zero one is read as root too, since some producers
 * write eight zero bytes for "no parent".
 *
 * Enums: kinds and status codes outside the values span.ts names become UNSPECIFIED / UNSET.
 *
 * Every malformed input fails with a KeyscopeError carrying one of the codes in errors.ts, and
 * leaves the decoder as usable as before.
 */
export interface TracesDecoder {
  decodeTraces(bytes: Uint8Array): Span[];
  /** Like `decodeTraces`, with the number of spans the request held, returned or not (see `unkeyedKinds`). */
  decodeTraceRequest(bytes: Uint8Array): DecodedTraces;
}

/**
 * A decoder of its own: what it remembers between requests (strings, trace ids, resources: the
 * caches in string-cache.ts, trace-id-cache.ts and resource-cache.ts, about 0.6 MB of them and
 * at most 8 MB of resources) is seen by no other decoder. Make one per consumer of a stream of
 * payloads and keep it. Throws TypeError/RangeError for invalid options (see decode-options.ts).
 */
export function createTracesDecoder(options?: DecodeOptions): TracesDecoder {
  return new ProtobufTracesDecoder(resolveDecodeOptions(options));
}

/** The decoders `decodeTraces` keeps: one per options object it was passed, held while the object lives. */
const decodersByOptions = new WeakMap<DecodeOptions, TracesDecoder>();
let defaultDecoder: TracesDecoder | undefined;

function decoderFor(options: DecodeOptions | undefined): TracesDecoder {
  if (options === undefined) return (defaultDecoder ??= createTracesDecoder());
  let decoder = decodersByOptions.get(options);
  if (decoder === undefined) {
    decoder = createTracesDecoder(options);
    decodersByOptions.set(options, decoder);
  }
  return decoder;
}

/**
 * `TracesDecoder.decodeTraces` with the decoder kept for `options`: one per options object (and
 * one for none), so callers that pass their own options object share nothing with each other.
 * Like key sets, an options object is compared by identity: pass the same one, unchanged, each
 * time (a new object each call decodes correctly, but starts with empty caches every time).
 */
export function decodeTraces(bytes: Uint8Array, options?: DecodeOptions): Span[] {
  return decoderFor(options).decodeTraces(bytes);
}

/** Like `decodeTraces`, with the number of spans the request held, returned or not (see `unkeyedKinds`). */
export function decodeTraceRequest(bytes: Uint8Array, options?: DecodeOptions): DecodedTraces {
  return decoderFor(options).decodeTraceRequest(bytes);
}

class ProtobufTracesDecoder extends ProtobufDecoderState implements TracesDecoder {
  decodeTraces(bytes: Uint8Array): Span[] {
    return new TraceRequestReader(bytes, this).request();
  }

  decodeTraceRequest(bytes: Uint8Array): DecodedTraces {
    const reader = new TraceRequestReader(bytes, this);
    const spans = reader.request();
    return { spans, spanCount: reader.spanCount };
  }
}

/** One request's decoding, with its decoder's options and caches. */
class TraceRequestReader extends ProtobufRequestReader {
  private readonly events: boolean;
  private readonly spans: Span[] = [];
  /** Spans read, returned or not. */
  spanCount = 0;

  constructor(bytes: Uint8Array, decoder: ProtobufTracesDecoder) {
    super(bytes, decoder);
    this.events = decoder.events;
  }

  request(): Span[] {
    const r = this.r;
    const end = this.bytes.length;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === EXPORT_TRACE_SERVICE_REQUEST_RESOURCE_SPANS) this.resourceSpans(r.lengthEnd(end));
      else r.skip(tag, end, EXPORT_TRACE_SERVICE_REQUEST);
    }
    return this.spans;
  }

  private resourceSpans(end: number): void {
    const r = this.r;
    const start = r.pos;
    const resource = this.containerResource(end, RESOURCE_SPANS);
    r.pos = start;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === RESOURCE_SPANS_SCOPE_SPANS) this.scopeSpans(r.lengthEnd(end), resource);
      else if (tag === RESOURCE_SPANS_RESOURCE) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, RESOURCE_SPANS);
    }
  }

  private scopeSpans(end: number, resource: Resource): void {
    const r = this.r;
    const scope: InstrumentationScope = { name: '', version: '' };
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === SCOPE_SPANS_SPANS) {
        const span = this.span(r.lengthEnd(end), resource, scope);
        if (span !== null) this.spans.push(span);
      } else if (tag === SCOPE_SPANS_SCOPE) this.scope(r.lengthEnd(end), scope);
      else r.skip(tag, end, SCOPE_SPANS);
    }
  }

  /** The span at [pos, end); null when the options leave it out (see `unkeyedKinds`). */
  private span(end: number, resource: Resource, scope: InstrumentationScope): Span | null {
    const r = this.r;
    const bytes = this.bytes;
    const spanStart = r.pos;
    let traceAt = -1;
    let spanAt = -1;
    let parentAt = -1;
    let nameAt = -1;
    let nameEnd = -1;
    let kind = 0;
    // Where the times are: converted at the end, and only for a span that is returned.
    let startAt = -1;
    let endAt = -1;
    let statusCode = 0;
    let statusMessage = '';
    // Under a key filter most spans keep no attribute and no event: they share frozen empties.
    const spanKeys = this.attributeKeys;
    let attributes: Attributes | null = spanKeys === null ? createAttributes() : null;
    let events: SpanEvent[] = NO_EVENTS;
    const selection = this.selection;
    if (selection !== null) selection.beginSpan();
    while (r.pos < end) {
      const tag = r.tag(end);
      switch (tag) {
        // Ids and name are checked where they lie and built at the end, once it is known whether
        // the span is keyed: under a keyed selection, a span without a key goes without them
        // (unless it failed and its kind is one of `failedKinds`).
        case SPAN_TRACE_ID: {
          const fieldEnd = r.lengthEnd(end);
          this.checkTraceId(r.pos, fieldEnd);
          traceAt = r.pos;
          r.pos = fieldEnd;
          break;
        }
        case SPAN_SPAN_ID: {
          const fieldEnd = r.lengthEnd(end);
          const at = r.pos;
          checkId('span id', at, fieldEnd, 8);
          if (isZero(r.view, at, 8)) throw zeroId('span id', at);
          spanAt = at;
          r.pos = fieldEnd;
          break;
        }
        case SPAN_PARENT_SPAN_ID: {
          const fieldEnd = r.lengthEnd(end);
          const at = r.pos;
          if (fieldEnd === at) parentAt = -1;
          else {
            checkId('parent span id', at, fieldEnd, 8);
            parentAt = isZero(r.view, at, 8) ? -1 : at;
          }
          r.pos = fieldEnd;
          break;
        }
        case SPAN_NAME:
          nameEnd = r.lengthEnd(end);
          nameAt = r.pos;
          r.pos = nameEnd;
          break;
        case SPAN_KIND:
          kind = r.varint32(end);
          break;
        case SPAN_START_TIME_UNIX_NANO:
          startAt = r.fixed64At(end);
          break;
        case SPAN_END_TIME_UNIX_NANO:
          endAt = r.fixed64At(end);
          break;
        case SPAN_ATTRIBUTES:
          if (spanKeys === null) this.keyValue(r.lengthEnd(end), attributes!, 0);
          else attributes = this.selectedKeyValue(r.lengthEnd(end), attributes, spanKeys, selection);
          break;
        case SPAN_EVENTS:
          if (this.events) (events === NO_EVENTS ? (events = []) : events).push(this.event(r.lengthEnd(end)));
          else r.pos = r.lengthEnd(end);
          break;
        case SPAN_STATUS: {
          const statusEnd = r.lengthEnd(end);
          while (r.pos < statusEnd) {
            const statusTag = r.tag(statusEnd);
            if (statusTag === STATUS_CODE) statusCode = r.varint32(statusEnd);
            else if (statusTag === STATUS_MESSAGE) statusMessage = this.string(r.lengthEnd(statusEnd));
            else r.skip(statusTag, statusEnd, STATUS);
          }
          break;
        }
        default:
          r.skip(tag, end, SPAN);
      }
    }
    if (traceAt === -1) throw missingId('trace id', 16, spanStart);
    if (spanAt === -1) throw missingId('span id', 8, spanStart);
    this.spanCount++;
    if (kind > 5) kind = 0;
    if (selection !== null && !selection.returns(kind, statusCode)) return null;
    let traceId = '';
    let spanId = '';
    let parentSpanId = '';
    let name = '';
    if (selection === null || selection.identifies(kind, statusCode)) {
      if (selection !== null && !selection.keyed) {
        attributes = selection.linkedAttributes(bytes, r.view, attributes, this);
        r.pos = end;
      }
      traceId = this.traceIdCache.get(bytes, r.view, traceAt);
      spanId = hexOf8(bytes, spanAt);
      if (parentAt !== -1) parentSpanId = hexOf8(bytes, parentAt);
      // Span names repeat (routes, operations): cached like short attribute values.
      if (nameAt !== -1) name = this.valueCache.get(bytes, r.view, nameAt, nameEnd);
    }
    const status: SpanStatus =
      statusMessage === '' && statusCode <= 2
        ? STATUS_WITHOUT_MESSAGE[statusCode]!
        : { code: (statusCode <= 2 ? statusCode : 0) as StatusCode, message: statusMessage };
    return {
      traceId,
      spanId,
      parentSpanId,
      name,
      kind: kind as SpanKind,
      startTimeUnixMillis: startAt === -1 ? 0 : r.millisAt(startAt),
      endTimeUnixMillis: endAt === -1 ? 0 : r.millisAt(endAt),
      status,
      attributes: attributes ?? NO_ATTRIBUTES,
      events,
      resource,
      scope,
    };
  }

  /** Refuses a trace id field that is not 16 bytes, or all zeros. */
  private checkTraceId(at: number, end: number): void {
    checkId('trace id', at, end, 16);
    if (isZero(this.r.view, at, 16)) throw zeroId('trace id', at);
  }

  private event(end: number): SpanEvent {
    const r = this.r;
    let name = '';
    let timeUnixMillis = 0;
    const attributes: Attributes = createAttributes();
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === SPAN_EVENT_ATTRIBUTES) this.keyValue(r.lengthEnd(end), attributes, 0);
      else if (tag === SPAN_EVENT_NAME) name = this.string(r.lengthEnd(end));
      else if (tag === SPAN_EVENT_TIME_UNIX_NANO) timeUnixMillis = r.fixed64Millis(end);
      else r.skip(tag, end, SPAN_EVENT);
    }
    return { name, timeUnixMillis, attributes };
  }
}
