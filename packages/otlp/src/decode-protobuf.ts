import { KeyscopeError } from '@keyscope/errors';
import { createAttributes } from './attributes.ts';
import {
  type DecodedTraces,
  type DecodeOptions,
  type ResolvedDecodeOptions,
  resolveDecodeOptions,
} from './decode-options.ts';
import { OTLP_ID_LENGTH, OTLP_ID_ZERO, OTLP_NESTING } from './errors.ts';
import { hexOf8 } from './hex.ts';
import { type KeyMatcher, keyMatcherFor, type MatchedKey } from './key-matcher.ts';
import { type AttributeValueDecoder, KEY_GROUP, KeyedSelection } from './keyed-selection.ts';
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
import { ResourceCache } from './resource-cache.ts';
import type {
  Attributes,
  AttributeValue,
  InstrumentationScope,
  Resource,
  Span,
  SpanEvent,
  SpanKind,
  SpanStatus,
  StatusCode,
} from './span.ts';
import { StringCache } from './string-cache.ts';
import { TraceIdCache } from './trace-id-cache.ts';
import { decodeUtf8 } from './utf8.ts';
import { WireReader } from './wire-reader.ts';

/*
 * The tags of the fields the decoder reads (otlp-fields.ts), as number constants of this module:
 * every field of every span is compared against several, and V8 compiles these as it does
 * literals. Compared against `SPAN.tag.traceId` and the like, which it reads at each comparison,
 * decoding took 12% more instructions per span (6% with the tag objects copied into this module).
 */
const EXPORT_TRACE_SERVICE_REQUEST_RESOURCE_SPANS = EXPORT_TRACE_SERVICE_REQUEST.tag.resourceSpans;
const RESOURCE_SPANS_RESOURCE = RESOURCE_SPANS.tag.resource;
const RESOURCE_SPANS_SCOPE_SPANS = RESOURCE_SPANS.tag.scopeSpans;
const RESOURCE_ATTRIBUTES = RESOURCE.tag.attributes;
const SCOPE_SPANS_SCOPE = SCOPE_SPANS.tag.scope;
const SCOPE_SPANS_SPANS = SCOPE_SPANS.tag.spans;
const INSTRUMENTATION_SCOPE_NAME = INSTRUMENTATION_SCOPE.tag.name;
const INSTRUMENTATION_SCOPE_VERSION = INSTRUMENTATION_SCOPE.tag.version;
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
const KEY_VALUE_KEY = KEY_VALUE.tag.key;
const KEY_VALUE_VALUE = KEY_VALUE.tag.value;
const ANY_VALUE_STRING_VALUE = ANY_VALUE.tag.stringValue;
const ANY_VALUE_BOOL_VALUE = ANY_VALUE.tag.boolValue;
const ANY_VALUE_INT_VALUE = ANY_VALUE.tag.intValue;
const ANY_VALUE_DOUBLE_VALUE = ANY_VALUE.tag.doubleValue;
const ANY_VALUE_ARRAY_VALUE = ANY_VALUE.tag.arrayValue;
const ANY_VALUE_KVLIST_VALUE = ANY_VALUE.tag.kvlistValue;
const ANY_VALUE_BYTES_VALUE = ANY_VALUE.tag.bytesValue;
const ARRAY_VALUE_VALUES = ARRAY_VALUE.tag.values;
const KEY_VALUE_LIST_VALUES = KEY_VALUE_LIST.tag.values;

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

class ProtobufTracesDecoder implements TracesDecoder {
  /** null: keep every attribute. Under a keyed selection, its `eager` matcher. */
  readonly spanKeys: KeyMatcher | null;
  readonly selection: KeyedSelection | null;
  readonly resourceKeys: KeyMatcher | null;
  readonly events: boolean;
  readonly maxDepth: number;
  /** Attribute keys repeat across spans and batches; see string-cache.ts. */
  readonly keyCache = new StringCache(2048, 64);
  /** Short values repeat too (methods, routes, service and host names, status strings, span names). */
  readonly valueCache = new StringCache(1024, 32);
  /**
   * Values of a keyed selection's `keys`: an idempotency key (a UUID is 36 bytes) is on every span of
   * its request, at each tier, client and server, usually within a few payloads of each other.
   * Decoding it to the same string each time spares the string, and makes the later stages' lookups
   * by key (the detector's, the attempt log's) find one already hashed and compare it by identity.
   */
  readonly keyValueCache = new StringCache(4096, 64);
  /**
   * Instrumentation scope names and versions: one pair per ScopeSpans, the same few in every batch,
   * and names run past the value cache's 32 bytes (`io.opentelemetry.instrumentation.http`).
   */
  readonly scopeCache = new StringCache(256, 128);
  /** A trace's spans are spread over a payload; see trace-id-cache.ts. */
  readonly traceIdCache = new TraceIdCache(4096);
  /** Decoded under this decoder's resource key set and depth limit, as no other decoder's are. */
  readonly resourceCache = new ResourceCache(512, 16 * 1024);

  constructor(options: ResolvedDecodeOptions) {
    if (options.spanSelection !== null) {
      this.selection = new KeyedSelection(
        options.spanSelection,
        options.unkeyedKindMask,
        options.failedKindMask,
      );
      this.spanKeys = this.selection.eager;
    } else {
      this.selection = null;
      this.spanKeys = options.spanKeys === null ? null : keyMatcherFor(options.spanKeys);
    }
    this.resourceKeys = options.resourceKeys === null ? null : keyMatcherFor(options.resourceKeys);
    this.events = options.events;
    this.maxDepth = options.maxDepth;
  }

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
class TraceRequestReader implements AttributeValueDecoder {
  private readonly r: WireReader;
  private readonly bytes: Uint8Array;
  private readonly spanKeys: KeyMatcher | null;
  private readonly selection: KeyedSelection | null;
  private readonly resourceKeys: KeyMatcher | null;
  private readonly events: boolean;
  private readonly maxDepth: number;
  private readonly keyCache: StringCache;
  private readonly valueCache: StringCache;
  private readonly keyValueCache: StringCache;
  private readonly scopeCache: StringCache;
  private readonly traceIdCache: TraceIdCache;
  private readonly resources: ResourceCache;
  private readonly spans: Span[] = [];
  /** Spans read, returned or not. */
  spanCount = 0;
  /** Whether the value being decoded is a key's (see keyValueCache). */
  private decodingKey = false;

  constructor(bytes: Uint8Array, decoder: ProtobufTracesDecoder) {
    this.bytes = bytes;
    this.r = new WireReader(bytes);
    this.spanKeys = decoder.spanKeys;
    this.selection = decoder.selection;
    this.resourceKeys = decoder.resourceKeys;
    this.events = decoder.events;
    this.maxDepth = decoder.maxDepth;
    this.keyCache = decoder.keyCache;
    this.valueCache = decoder.valueCache;
    this.keyValueCache = decoder.keyValueCache;
    this.scopeCache = decoder.scopeCache;
    this.traceIdCache = decoder.traceIdCache;
    this.resources = decoder.resourceCache;
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
    // Protobuf does not order fields, and spans that precede the `resource` field must still get
    // its object: find it first (one tag and length per field), then read the scope spans.
    let resourceStart = -1;
    let resourceEnd = -1;
    let resourceFields = 0;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === RESOURCE_SPANS_RESOURCE) {
        resourceEnd = r.lengthEnd(end);
        resourceStart = r.pos;
        resourceFields++;
        r.pos = resourceEnd;
      } else if (tag === RESOURCE_SPANS_SCOPE_SPANS) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, RESOURCE_SPANS);
    }
    // A resource written in several parts is merged, as protobuf merges repeated messages.
    const resource =
      resourceFields === 1
        ? this.cachedResource(resourceStart, resourceEnd)
        : this.mergedResource(start, end);
    if (this.selection !== null) this.selection.beginResource(resource);
    r.pos = start;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === RESOURCE_SPANS_SCOPE_SPANS) this.scopeSpans(r.lengthEnd(end), resource);
      else if (tag === RESOURCE_SPANS_RESOURCE) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, RESOURCE_SPANS);
    }
  }

  private cachedResource(start: number, end: number): Resource {
    const cached = this.resources.get(this.bytes, this.r.view, start, end);
    if (cached !== undefined) return cached;
    const resource: Resource = { attributes: createAttributes() };
    this.r.pos = start;
    this.resource(end, resource.attributes);
    return this.resources.set(this.bytes, this.r.view, start, end, resource);
  }

  /** Every `resource` field of the ResourceSpans at [start, end) into one (possibly empty) resource. */
  private mergedResource(start: number, end: number): Resource {
    const r = this.r;
    const resource: Resource = { attributes: createAttributes() };
    r.pos = start;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === RESOURCE_SPANS_RESOURCE) this.resource(r.lengthEnd(end), resource.attributes);
      else if (tag === RESOURCE_SPANS_SCOPE_SPANS) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, RESOURCE_SPANS);
    }
    return resource;
  }

  private resource(end: number, attributes: Attributes): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === RESOURCE_ATTRIBUTES) this.attribute(r.lengthEnd(end), attributes, this.resourceKeys);
      else r.skip(tag, end, RESOURCE);
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

  private scope(end: number, scope: InstrumentationScope): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === INSTRUMENTATION_SCOPE_NAME)
        scope.name = this.cachedString(this.scopeCache, r.lengthEnd(end));
      else if (tag === INSTRUMENTATION_SCOPE_VERSION)
        scope.version = this.cachedString(this.scopeCache, r.lengthEnd(end));
      else r.skip(tag, end, INSTRUMENTATION_SCOPE);
    }
  }

  private cachedString(cache: StringCache, end: number): string {
    const r = this.r;
    const text = cache.get(this.bytes, r.view, r.pos, end);
    r.pos = end;
    return text;
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
    const spanKeys = this.spanKeys;
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

  /** A resource attribute: all of them, or only those `keys` matches. */
  private attribute(end: number, target: Attributes, keys: KeyMatcher | null): void {
    if (keys === null) this.keyValue(end, target, 0);
    else this.selectedKeyValue(end, target, keys, null);
  }

  /**
   * One KeyValue into `target`. The value is located while scanning (protobuf allows it before
   * the key) and decoded after.
   */
  private keyValue(end: number, target: Attributes, depth: number): void {
    const r = this.r;
    let key = '';
    let valueStart = -1;
    let valueEnd = -1;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === KEY_VALUE_KEY) {
        const keyEnd = r.lengthEnd(end);
        key = this.keyCache.get(this.bytes, r.view, r.pos, keyEnd);
        r.pos = keyEnd;
      } else if (tag === KEY_VALUE_VALUE) {
        valueEnd = r.lengthEnd(end);
        valueStart = r.pos;
        r.pos = valueEnd;
      } else r.skip(tag, end, KEY_VALUE);
    }
    this.value(target, key, valueStart, valueEnd, depth);
    r.pos = end;
  }

  /**
   * Like `keyValue`, but only keys `keys` matches are decoded at all (see key-matcher.ts); under a
   * keyed `selection`, also the `whenKeyed` ones it lets through. A kept attribute goes into
   * `target`, created on the first one; returns it.
   */
  private selectedKeyValue(
    end: number,
    target: Attributes | null,
    keys: KeyMatcher,
    selection: KeyedSelection | null,
  ): Attributes | null {
    const r = this.r;
    const bytes = this.bytes;
    // Every encoder writes a KeyValue as key, then value, each with a one-byte tag. When the
    // bytes frame exactly that, an unwanted attribute is rejected on its key and skipped whole,
    // without reading the value's tag and length one field at a time.
    const at = r.pos;
    if (bytes[at] === KEY_VALUE_KEY) {
      const keyLength = bytes[at + 1]!;
      const keyStart = at + 2;
      const keyEnd = keyStart + keyLength;
      if (keyLength < 0x80 && keyEnd < end && bytes[keyEnd] === KEY_VALUE_VALUE) {
        const valueLength = bytes[keyEnd + 1]!;
        if (valueLength < 0x80 && keyEnd + 2 + valueLength === end) {
          const found = keys.find(bytes, r.view, keyStart, keyEnd);
          if (found !== undefined) target = this.selected(target, found, keyEnd + 2, end);
          else if (selection !== null)
            target = this.whenKeyed(target, selection, keyStart, keyEnd, keyEnd + 2, end);
          r.pos = end;
          return target;
        }
      }
    }
    let keyStart = 0;
    let keyEnd = 0;
    let valueStart = -1;
    let valueEnd = -1;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === KEY_VALUE_KEY) {
        keyEnd = r.lengthEnd(end);
        keyStart = r.pos;
        r.pos = keyEnd;
      } else if (tag === KEY_VALUE_VALUE) {
        valueEnd = r.lengthEnd(end);
        valueStart = r.pos;
        r.pos = valueEnd;
      } else r.skip(tag, end, KEY_VALUE);
    }
    const found = keys.find(bytes, r.view, keyStart, keyEnd);
    if (found !== undefined) target = this.selected(target, found, valueStart, valueEnd);
    else if (selection !== null)
      target = this.whenKeyed(target, selection, keyStart, keyEnd, valueStart, valueEnd);
    r.pos = end;
    return target;
  }

  /**
   * An attribute outside `keys` that `selection` may keep (see KeyedSelection.whenKeyed) into
   * `target` (created on the first one), which it returns. Leaves the reader anywhere: callers
   * reposition it.
   */
  private whenKeyed(
    target: Attributes | null,
    selection: KeyedSelection,
    keyStart: number,
    keyEnd: number,
    valueStart: number,
    valueEnd: number,
  ): Attributes | null {
    const key = selection.whenKeyed(this.bytes, this.r.view, keyStart, keyEnd, valueStart, valueEnd);
    if (key === undefined) return target;
    target ??= createAttributes();
    this.value(target, key, valueStart, valueEnd, 0);
    return target;
  }

  /**
   * An attribute `keys` matched into `target` (created on the first one), which it returns.
   * Leaves the reader anywhere: callers reposition it.
   */
  private selected(target: Attributes | null, found: MatchedKey, valueStart: number, valueEnd: number) {
    target ??= createAttributes();
    if (found.group === KEY_GROUP.KEY) {
      // Only a keyed selection's matcher has this group.
      this.selection!.keyFound(this.bytes, this.r.view, target, this);
      this.decodingKey = true;
      this.value(target, found.key, valueStart, valueEnd, 0);
      this.decodingKey = false;
    } else this.value(target, found.key, valueStart, valueEnd, 0);
    return target;
  }

  /** Decodes the AnyValue at `[valueStart, valueEnd)` into `target[key]`; no value is null. */
  value(target: Attributes, key: string, valueStart: number, valueEnd: number, depth: number): void {
    if (valueStart < 0) {
      target[key] = null;
      return;
    }
    this.r.pos = valueStart;
    target[key] = this.anyValue(valueEnd, depth);
  }

  private anyValue(end: number, depth: number): AttributeValue {
    const r = this.r;
    // An AnyValue with no field set is "empty"; a oneof written twice keeps the last, as protobuf does.
    let value: AttributeValue = null;
    while (r.pos < end) {
      const tag = r.tag(end);
      switch (tag) {
        case ANY_VALUE_STRING_VALUE: {
          const stringEnd = r.lengthEnd(end);
          value = (this.decodingKey ? this.keyValueCache : this.valueCache).get(
            this.bytes,
            r.view,
            r.pos,
            stringEnd,
          );
          r.pos = stringEnd;
          break;
        }
        case ANY_VALUE_INT_VALUE:
          value = r.int64(end);
          break;
        case ANY_VALUE_BOOL_VALUE:
          value = r.bool(end);
          break;
        case ANY_VALUE_DOUBLE_VALUE:
          value = r.double(end);
          break;
        case ANY_VALUE_ARRAY_VALUE:
          value = this.arrayValue(r.lengthEnd(end), depth + 1);
          break;
        case ANY_VALUE_KVLIST_VALUE: {
          const listEnd = r.lengthEnd(end);
          value = this.keyValueList(listEnd, depth + 1);
          break;
        }
        case ANY_VALUE_BYTES_VALUE: {
          const bytesEnd = r.lengthEnd(end);
          // A copy, so the span does not keep the whole payload alive or see it reused.
          value = new Uint8Array(this.bytes.subarray(r.pos, bytesEnd));
          r.pos = bytesEnd;
          break;
        }
        default:
          r.skip(tag, end, ANY_VALUE);
      }
    }
    return value;
  }

  private arrayValue(end: number, depth: number): AttributeValue[] {
    if (depth > this.maxDepth) throw tooDeep(depth, this.maxDepth, this.r.pos);
    const r = this.r;
    const values: AttributeValue[] = [];
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === ARRAY_VALUE_VALUES) values.push(this.anyValue(r.lengthEnd(end), depth));
      else r.skip(tag, end, ARRAY_VALUE);
    }
    return values;
  }

  private keyValueList(end: number, depth: number): Attributes {
    if (depth > this.maxDepth) throw tooDeep(depth, this.maxDepth, this.r.pos);
    const r = this.r;
    const values: Attributes = createAttributes();
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === KEY_VALUE_LIST_VALUES) this.keyValue(r.lengthEnd(end), values, depth);
      else r.skip(tag, end, KEY_VALUE_LIST);
    }
    return values;
  }

  /** A string field ending at `end`; leaves the reader after it. */
  private string(end: number): string {
    const r = this.r;
    const text = decodeUtf8(this.bytes, r.pos, end);
    r.pos = end;
    return text;
  }
}

function checkId(what: string, at: number, end: number, size: number): void {
  if (end - at !== size) {
    throw new KeyscopeError(
      OTLP_ID_LENGTH,
      `${what} must be ${size} bytes, received ${end - at} (at byte ${at})`,
    );
  }
}

function missingId(what: string, size: number, spanStart: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_ID_LENGTH,
    `${what} must be ${size} bytes, received 0 (span at byte ${spanStart})`,
  );
}

function zeroId(what: string, at: number): KeyscopeError {
  return new KeyscopeError(OTLP_ID_ZERO, `${what} must not be all zeros, received all zeros (at byte ${at})`);
}

function tooDeep(depth: number, maxDepth: number, at: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_NESTING,
    `attribute values must nest at most ${maxDepth} arrays/kvlists deep, received ${depth} (at byte ${at})`,
  );
}

/** Whether the `size` bytes at `at` (a multiple of four) are all zero; read a word at a time. */
function isZero(view: DataView, at: number, size: number): boolean {
  for (let i = 0; i < size; i += 4) if (view.getInt32(at + i) !== 0) return false;
  return true;
}
