import { KeyscopeError } from '@keyscope/errors';
import { carriesKey, createAttributes } from './attributes.ts';
import {
  type DecodedTraces,
  type DecodeOptions,
  type KeyedAttributeSelection,
  type ResolvedDecodeOptions,
  resolveDecodeOptions,
} from './decode-options.ts';
import { OTLP_ID_LENGTH, OTLP_ID_ZERO, OTLP_NESTING } from './errors.ts';
import { hexOf8 } from './hex.ts';
import {
  KEY_GROUP,
  type KeyMatcher,
  keyMatcherFor,
  type MatchedKey,
  selectionMatchersFor,
} from './key-matcher.ts';
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
import { messageFields, WireReader, WireType } from './wire-reader.ts';

/*
 * Field numbers and wire types from opentelemetry-proto (collector/trace/v1/trace_service.proto,
 * trace/v1/trace.proto, resource/v1/resource.proto, common/v1/common.proto). The decoder switches
 * on whole tags ((field << 3) | wire type), so a known field with the wrong wire type falls through
 * to `skip`, which refuses it. Fields keyscope does not keep (trace_state, links, flags, dropped
 * counts, schema urls) are listed so their wire types are still checked.
 */
const { VARINT, I64, LEN, I32 } = WireType;

const REQUEST = messageFields('ExportTraceServiceRequest', { 1: ['resource_spans', LEN] });
const RESOURCE_SPANS = messageFields('ResourceSpans', {
  1: ['resource', LEN],
  2: ['scope_spans', LEN],
  3: ['schema_url', LEN],
});
const RESOURCE = messageFields('Resource', {
  1: ['attributes', LEN],
  2: ['dropped_attributes_count', VARINT],
});
const SCOPE_SPANS = messageFields('ScopeSpans', {
  1: ['scope', LEN],
  2: ['spans', LEN],
  3: ['schema_url', LEN],
});
const SCOPE = messageFields('InstrumentationScope', {
  1: ['name', LEN],
  2: ['version', LEN],
  3: ['attributes', LEN],
  4: ['dropped_attributes_count', VARINT],
});
const SPAN = messageFields('Span', {
  1: ['trace_id', LEN],
  2: ['span_id', LEN],
  3: ['trace_state', LEN],
  4: ['parent_span_id', LEN],
  5: ['name', LEN],
  6: ['kind', VARINT],
  7: ['start_time_unix_nano', I64],
  8: ['end_time_unix_nano', I64],
  9: ['attributes', LEN],
  10: ['dropped_attributes_count', VARINT],
  11: ['events', LEN],
  12: ['dropped_events_count', VARINT],
  13: ['links', LEN],
  14: ['dropped_links_count', VARINT],
  15: ['status', LEN],
  16: ['flags', I32],
});
const EVENT = messageFields('Span.Event', {
  1: ['time_unix_nano', I64],
  2: ['name', LEN],
  3: ['attributes', LEN],
  4: ['dropped_attributes_count', VARINT],
});
// Field 1 (deprecated_code) is reserved: old senders may still write it, so it is skipped as unknown.
const STATUS = messageFields('Status', { 2: ['message', LEN], 3: ['code', VARINT] });
const KEY_VALUE = messageFields('KeyValue', { 1: ['key', LEN], 2: ['value', LEN] });
const ANY_VALUE = messageFields('AnyValue', {
  1: ['string_value', LEN],
  2: ['bool_value', VARINT],
  3: ['int_value', VARINT],
  4: ['double_value', I64],
  5: ['array_value', LEN],
  6: ['kvlist_value', LEN],
  7: ['bytes_value', LEN],
});
const ARRAY_VALUE = messageFields('ArrayValue', { 1: ['values', LEN] });
const KEY_VALUE_LIST = messageFields('KeyValueList', { 1: ['values', LEN] });

/** What spans without attributes, events or a status message share; frozen, so no consumer can change them. */
const NO_ATTRIBUTES: Attributes = Object.freeze(createAttributes());
const NO_EVENTS: SpanEvent[] = Object.freeze([]) as unknown as SpanEvent[];
const STATUS_WITHOUT_MESSAGE: readonly SpanStatus[] = [0, 1, 2].map((code) =>
  Object.freeze({ code: code as StatusCode, message: '' }),
);

/** Attribute keys repeat across spans and batches; see string-cache.ts. */
const keyCache = new StringCache(2048, 64);
/** Short values repeat too (methods, routes, service and host names, status strings). */
const valueCache = new StringCache(1024, 32);
/**
 * Values of a keyed selection's `keys`: an idempotency key (a UUID is 36 bytes) is on every span of
 * its request, at each tier, client and server, usually within a few payloads of each other.
 * Decoding it to the same string each time spares the string, and makes the later stages' lookups
 * by key (the detector's, the attempt log's) find one already hashed and compare it by identity.
 */
const keyValueCache = new StringCache(4096, 64);
/**
 * Instrumentation scope names and versions: one pair per ScopeSpans, the same few in every batch,
 * and names run past the value cache's 32 bytes (`io.opentelemetry.instrumentation.http`).
 */
const scopeCache = new StringCache(256, 128);
/** A trace's spans are spread over a payload; see trace-id-cache.ts. */
const traceIdCache = new TraceIdCache(4096);

/**
 * Decoded resources, one cache per resource key set and depth limit (a resource decoded under
 * one filter is not the decoding under another). Key sets are compared by identity: a caller
 * passes the same set on every call, as the receivers do, and never changes it.
 */
const resourceCaches = new WeakMap<object, Map<number, ResourceCache>>();
const ALL_RESOURCE_KEYS = {};

function resourceCacheFor(keys: ReadonlySet<string> | null, maxDepth: number): ResourceCache {
  const identity = keys ?? ALL_RESOURCE_KEYS;
  let byDepth = resourceCaches.get(identity);
  if (byDepth === undefined) {
    byDepth = new Map();
    resourceCaches.set(identity, byDepth);
  }
  let cache = byDepth.get(maxDepth);
  if (cache === undefined) {
    cache = new ResourceCache(512, 16 * 1024);
    byDepth.set(maxDepth, cache);
  }
  return cache;
}

/**
 * Decodes a protobuf `ExportTraceServiceRequest` into keyscope spans.
 *
 * Spans of one ResourceSpans share one `Resource` object and spans of one ScopeSpans share one
 * `InstrumentationScope` object. Resources whose encoded bytes were decoded before (with the same
 * resource key set and depth limit) are the same frozen object as then: see resource-cache.ts.
 * The result never aliases `bytes`, so the caller may reuse it.
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
 * Every malformed input fails with a KeyscopeError carrying one of the codes in errors.ts.
 */
export function decodeTraces(bytes: Uint8Array, options?: DecodeOptions): Span[] {
  return decodeTraceRequest(bytes, options).spans;
}

/** Like `decodeTraces`, with the number of spans the request held, returned or not (see `unkeyedKinds`). */
export function decodeTraceRequest(bytes: Uint8Array, options?: DecodeOptions): DecodedTraces {
  const decoder = new TraceDecoder(bytes, resolveDecodeOptions(options));
  const spans = decoder.request();
  return { spans, spanCount: decoder.spanCount };
}

class TraceDecoder {
  private readonly r: WireReader;
  private readonly bytes: Uint8Array;
  /** null: keep every attribute. */
  private readonly spanKeys: KeyMatcher | null;
  /** Under a keyed selection: its `whenKeyed` keys (the others are in `spanKeys`). */
  private readonly whenKeyedKeys: KeyMatcher | null;
  private readonly selection: KeyedAttributeSelection | null;
  private readonly resourceKeys: KeyMatcher | null;
  private readonly resources: ResourceCache;
  private readonly events: boolean;
  private readonly maxDepth: number;
  /** See `ResolvedDecodeOptions.unkeyedKindMask`. */
  private readonly unkeyedKindMask: number;
  private readonly spans: Span[] = [];
  /** Spans read, returned or not. */
  spanCount = 0;
  /** Under a keyed selection: whether the current ResourceSpans' resource carries a key. */
  private resourceKeyed = false;
  /** Whether the span being decoded is keyed (see KeyedAttributeSelection). */
  private keyed = false;
  /**
   * Attributes of the current span that may be `whenKeyed` ones, met before it was known to be
   * keyed: located (key start and end, value start and end), neither matched exactly nor decoded.
   * Matched and decoded, in order, when a key turns up; dropped at the span's end otherwise.
   */
  private pendingCount = 0;
  private readonly pending: number[] = [];
  /** Whether the value being decoded is a key's (see keyValueCache). */
  private decodingKey = false;

  constructor(bytes: Uint8Array, options: ResolvedDecodeOptions) {
    this.bytes = bytes;
    this.r = new WireReader(bytes);
    this.selection = options.spanSelection;
    if (options.spanSelection !== null) {
      const matchers = selectionMatchersFor(options.spanSelection);
      this.spanKeys = matchers.eager;
      this.whenKeyedKeys = matchers.deferred;
    } else {
      this.spanKeys = options.spanKeys === null ? null : keyMatcherFor(options.spanKeys);
      this.whenKeyedKeys = null;
    }
    this.resourceKeys = options.resourceKeys === null ? null : keyMatcherFor(options.resourceKeys);
    this.resources = resourceCacheFor(options.resourceKeys, options.maxDepth);
    this.events = options.events;
    this.maxDepth = options.maxDepth;
    this.unkeyedKindMask = options.unkeyedKindMask;
  }

  request(): Span[] {
    const r = this.r;
    const end = this.bytes.length;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === 0x0a) this.resourceSpans(r.lengthEnd(end));
      else r.skip(tag, end, REQUEST);
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
      if (tag === 0x0a) {
        resourceEnd = r.lengthEnd(end);
        resourceStart = r.pos;
        resourceFields++;
        r.pos = resourceEnd;
      } else if (tag === 0x12) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, RESOURCE_SPANS);
    }
    // A resource written in several parts is merged, as protobuf merges repeated messages.
    const resource =
      resourceFields === 1
        ? this.cachedResource(resourceStart, resourceEnd)
        : this.mergedResource(start, end);
    this.resourceKeyed = this.selection !== null && carriesKey(resource.attributes, this.selection.keys);
    r.pos = start;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === 0x12) this.scopeSpans(r.lengthEnd(end), resource);
      else if (tag === 0x0a) r.pos = r.lengthEnd(end);
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
      if (tag === 0x0a) this.resource(r.lengthEnd(end), resource.attributes);
      else if (tag === 0x12) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, RESOURCE_SPANS);
    }
    return resource;
  }

  private resource(end: number, attributes: Attributes): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === 0x0a) this.attribute(r.lengthEnd(end), attributes, this.resourceKeys);
      else r.skip(tag, end, RESOURCE);
    }
  }

  private scopeSpans(end: number, resource: Resource): void {
    const r = this.r;
    const scope: InstrumentationScope = { name: '', version: '' };
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === 0x12) {
        const span = this.span(r.lengthEnd(end), resource, scope);
        if (span !== null) this.spans.push(span);
      } else if (tag === 0x0a) this.scope(r.lengthEnd(end), scope);
      else r.skip(tag, end, SCOPE_SPANS);
    }
  }

  private scope(end: number, scope: InstrumentationScope): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === 0x0a) scope.name = this.cachedString(scopeCache, r.lengthEnd(end));
      else if (tag === 0x12) scope.version = this.cachedString(scopeCache, r.lengthEnd(end));
      else r.skip(tag, end, SCOPE);
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
    this.keyed = this.resourceKeyed;
    this.pendingCount = 0;
    while (r.pos < end) {
      const tag = r.tag(end);
      switch (tag) {
        // Ids and name are checked where they lie and built at the end, once it is known whether
        // the span is keyed: under a keyed selection, a span without a key goes without them.
        case 0x0a: {
          const fieldEnd = r.lengthEnd(end);
          this.checkTraceId(r.pos, fieldEnd);
          traceAt = r.pos;
          r.pos = fieldEnd;
          break;
        }
        case 0x12: {
          const fieldEnd = r.lengthEnd(end);
          const at = r.pos;
          checkId('span id', at, fieldEnd, 8);
          if (isZero(r.view, at, 8)) throw zeroId('span id', at);
          spanAt = at;
          r.pos = fieldEnd;
          break;
        }
        case 0x22: {
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
        case 0x2a:
          nameEnd = r.lengthEnd(end);
          nameAt = r.pos;
          r.pos = nameEnd;
          break;
        case 0x30:
          kind = r.varint32(end);
          break;
        case 0x39:
          startAt = r.fixed64At(end);
          break;
        case 0x41:
          endAt = r.fixed64At(end);
          break;
        case 0x4a:
          if (spanKeys === null) this.keyValue(r.lengthEnd(end), attributes!, 0);
          else attributes = this.selectedKeyValue(r.lengthEnd(end), attributes, spanKeys, this.whenKeyedKeys);
          break;
        case 0x5a:
          if (this.events) (events === NO_EVENTS ? (events = []) : events).push(this.event(r.lengthEnd(end)));
          else r.pos = r.lengthEnd(end);
          break;
        case 0x7a: {
          const statusEnd = r.lengthEnd(end);
          while (r.pos < statusEnd) {
            const statusTag = r.tag(statusEnd);
            if (statusTag === 0x18) statusCode = r.varint32(statusEnd);
            else if (statusTag === 0x12) statusMessage = this.string(r.lengthEnd(statusEnd));
            else r.skip(statusTag, statusEnd, STATUS);
          }
          break;
        }
        default:
          r.skip(tag, end, SPAN);
      }
    }
    // Attributes kept only on keyed spans, met on a span that turned out to carry no key.
    this.pendingCount = 0;
    if (traceAt === -1) throw missingId('trace id', 16, spanStart);
    if (spanAt === -1) throw missingId('span id', 8, spanStart);
    this.spanCount++;
    if (kind > 5) kind = 0;
    if (!this.keyed && ((this.unkeyedKindMask >>> kind) & 1) === 0) return null;
    let traceId = '';
    let spanId = '';
    let parentSpanId = '';
    let name = '';
    if (this.keyed || this.selection === null) {
      traceId = traceIdCache.get(bytes, r.view, traceAt);
      spanId = hexOf8(bytes, spanAt);
      if (parentAt !== -1) parentSpanId = hexOf8(bytes, parentAt);
      // Span names repeat (routes, operations): cached like short attribute values.
      if (nameAt !== -1) name = valueCache.get(bytes, r.view, nameAt, nameEnd);
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
      if (tag === 0x1a) this.keyValue(r.lengthEnd(end), attributes, 0);
      else if (tag === 0x12) name = this.string(r.lengthEnd(end));
      else if (tag === 0x09) timeUnixMillis = r.fixed64Millis(end);
      else r.skip(tag, end, EVENT);
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
      if (tag === 0x0a) {
        const keyEnd = r.lengthEnd(end);
        key = keyCache.get(this.bytes, r.view, r.pos, keyEnd);
        r.pos = keyEnd;
      } else if (tag === 0x12) {
        valueEnd = r.lengthEnd(end);
        valueStart = r.pos;
        r.pos = valueEnd;
      } else r.skip(tag, end, KEY_VALUE);
    }
    this.value(target, key, valueStart, valueEnd, depth);
    r.pos = end;
  }

  /**
   * Like `keyValue`, but only keys `keys` matches are decoded at all (see key-matcher.ts). A match
   * goes into `target`, created on the first one; returns it.
   */
  private selectedKeyValue(
    end: number,
    target: Attributes | null,
    keys: KeyMatcher,
    whenKeyed: KeyMatcher | null,
  ): Attributes | null {
    const r = this.r;
    const bytes = this.bytes;
    // Every encoder writes a KeyValue as key, then value, each with a one-byte tag. When the
    // bytes frame exactly that, an unwanted attribute is rejected on its key and skipped whole,
    // without reading the value's tag and length one field at a time.
    const at = r.pos;
    if (bytes[at] === 0x0a) {
      const keyLength = bytes[at + 1]!;
      const keyStart = at + 2;
      const keyEnd = keyStart + keyLength;
      if (keyLength < 0x80 && keyEnd < end && bytes[keyEnd] === 0x12) {
        const valueLength = bytes[keyEnd + 1]!;
        if (valueLength < 0x80 && keyEnd + 2 + valueLength === end) {
          const found = keys.find(bytes, r.view, keyStart, keyEnd);
          if (found !== undefined) target = this.selected(target, found, keyEnd + 2, end);
          else if (whenKeyed !== null)
            target = this.whenKeyed(target, whenKeyed, keyStart, keyEnd, keyEnd + 2, end);
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
      if (tag === 0x0a) {
        keyEnd = r.lengthEnd(end);
        keyStart = r.pos;
        r.pos = keyEnd;
      } else if (tag === 0x12) {
        valueEnd = r.lengthEnd(end);
        valueStart = r.pos;
        r.pos = valueEnd;
      } else r.skip(tag, end, KEY_VALUE);
    }
    const found = keys.find(this.bytes, r.view, keyStart, keyEnd);
    if (found !== undefined) target = this.selected(target, found, valueStart, valueEnd);
    else if (whenKeyed !== null)
      target = this.whenKeyed(target, whenKeyed, keyStart, keyEnd, valueStart, valueEnd);
    r.pos = end;
    return target;
  }

  /**
   * An attribute `keys` kept into `target` (created on the first one), which it returns. A key
   * makes the span keyed: first the attributes noted while it was not are matched and decoded,
   * in order, so a repeated key keeps its last value. Leaves the reader anywhere: callers
   * reposition it.
   */
  private selected(target: Attributes | null, found: MatchedKey, valueStart: number, valueEnd: number) {
    target ??= createAttributes();
    if (found.group === KEY_GROUP.KEY && !this.keyed) {
      this.keyed = true;
      const pending = this.pending;
      for (let i = 0; i < this.pendingCount; i += 4) {
        const key = this.whenKeyedKeys!.match(this.bytes, pending[i]!, pending[i + 1]!, this.r.view);
        if (key !== undefined) this.value(target, key, pending[i + 2]!, pending[i + 3]!, 0);
      }
      this.pendingCount = 0;
    }
    if (found.group === KEY_GROUP.KEY) {
      this.decodingKey = true;
      this.value(target, found.key, valueStart, valueEnd, 0);
      this.decodingKey = false;
    } else this.value(target, found.key, valueStart, valueEnd, 0);
    return target;
  }

  /**
   * An attribute that may be one of a keyed selection's `whenKeyed` keys: kept on a keyed span;
   * on one not (yet) known to be keyed, noted if its key may match (see `selected`).
   */
  private whenKeyed(
    target: Attributes | null,
    keys: KeyMatcher,
    keyStart: number,
    keyEnd: number,
    valueStart: number,
    valueEnd: number,
  ): Attributes | null {
    if (this.keyed) {
      const key = keys.match(this.bytes, keyStart, keyEnd, this.r.view);
      if (key === undefined) return target;
      target ??= createAttributes();
      this.value(target, key, valueStart, valueEnd, 0);
      return target;
    }
    if (keys.mayMatch(this.bytes, keyStart, keyEnd)) {
      const at = this.pendingCount;
      const pending = this.pending;
      pending[at] = keyStart;
      pending[at + 1] = keyEnd;
      pending[at + 2] = valueStart;
      pending[at + 3] = valueEnd;
      this.pendingCount = at + 4;
    }
    return target;
  }

  /** Decodes the AnyValue at `[valueStart, valueEnd)` into `target[key]`; no value is null. */
  private value(target: Attributes, key: string, valueStart: number, valueEnd: number, depth: number): void {
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
        case 0x0a: {
          const stringEnd = r.lengthEnd(end);
          value = (this.decodingKey ? keyValueCache : valueCache).get(this.bytes, r.view, r.pos, stringEnd);
          r.pos = stringEnd;
          break;
        }
        case 0x18:
          value = r.int64(end);
          break;
        case 0x10:
          value = r.bool(end);
          break;
        case 0x21:
          value = r.double(end);
          break;
        case 0x2a:
          value = this.arrayValue(r.lengthEnd(end), depth + 1);
          break;
        case 0x32: {
          const listEnd = r.lengthEnd(end);
          value = this.keyValueList(listEnd, depth + 1);
          break;
        }
        case 0x3a: {
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
      if (tag === 0x0a) values.push(this.anyValue(r.lengthEnd(end), depth));
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
      if (tag === 0x0a) this.keyValue(r.lengthEnd(end), values, depth);
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
