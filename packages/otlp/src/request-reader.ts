import { KeyscopeError } from '@keyscope/errors';
import { createAttributes } from './attributes.ts';
import type { ResolvedDecodeOptions } from './decode-options.ts';
import { OTLP_ID_LENGTH, OTLP_ID_ZERO, OTLP_NESTING } from './errors.ts';
import { type KeyMatcher, keyMatcherFor, type MatchedKey } from './key-matcher.ts';
import { type AttributeValueDecoder, KEY_GROUP, KeyedSelection } from './keyed-selection.ts';
import {
  ANY_VALUE,
  ARRAY_VALUE,
  INSTRUMENTATION_SCOPE,
  KEY_VALUE,
  KEY_VALUE_LIST,
  RESOURCE,
  RESOURCE_LOGS,
  RESOURCE_SPANS,
} from './otlp-fields.ts';
import type { ProtoMessage } from './proto-message.ts';
import { ResourceCache } from './resource-cache.ts';
import type { Attributes, AttributeValue, InstrumentationScope, Resource } from './span.ts';
import { StringCache } from './string-cache.ts';
import { TraceIdCache } from './trace-id-cache.ts';
import { decodeUtf8 } from './utf8.ts';
import { WireReader } from './wire-reader.ts';

/*
 * What the protobuf decoders of traces (decode-protobuf.ts) and logs (decode-logs-protobuf.ts)
 * share: a decoder's options and caches (`ProtobufDecoderState`), and the reading of what both
 * requests are made of (`ProtobufRequestReader`): resources, instrumentation scopes, attributes
 * and their values, ids.
 *
 * The tags of the fields read here (otlp-fields.ts), as number constants of this module: every
 * field of every span is compared against several, and V8 compiles these as it does literals.
 * Compared against `SPAN.tag.traceId` and the like, which it reads at each comparison, decoding
 * took 12% more instructions per span (6% with the tag objects copied into this module).
 */
const RESOURCE_ATTRIBUTES = RESOURCE.tag.attributes;
const INSTRUMENTATION_SCOPE_NAME = INSTRUMENTATION_SCOPE.tag.name;
const INSTRUMENTATION_SCOPE_VERSION = INSTRUMENTATION_SCOPE.tag.version;
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

/**
 * ResourceSpans and ResourceLogs declare the same layout: `resource` is field 1 and the list of
 * scopes field 2 (opentelemetry-proto), so one reading of their resource serves both.
 */
const CONTAINER_RESOURCE = RESOURCE_SPANS.tag.resource;
const CONTAINER_SCOPES = RESOURCE_SPANS.tag.scopeSpans;
if (RESOURCE_LOGS.tag.resource !== CONTAINER_RESOURCE || RESOURCE_LOGS.tag.scopeLogs !== CONTAINER_SCOPES) {
  throw new Error('ResourceLogs must declare resource and scope_logs as ResourceSpans does');
}

/**
 * A protobuf decoder's options, resolved, and what it remembers between requests (strings,
 * trace ids, resources: the caches in string-cache.ts, trace-id-cache.ts and resource-cache.ts,
 * about 0.6 MB of them and at most 8 MB of resources), seen by no other decoder.
 */
export class ProtobufDecoderState {
  /**
   * The attributes kept of a span's or log record's own: null keeps every one. Under a keyed
   * selection, its `eager` matcher.
   */
  readonly attributeKeys: KeyMatcher | null;
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
      this.attributeKeys = this.selection.eager;
    } else {
      this.selection = null;
      this.attributeKeys = options.spanKeys === null ? null : keyMatcherFor(options.spanKeys);
    }
    this.resourceKeys = options.resourceKeys === null ? null : keyMatcherFor(options.resourceKeys);
    this.events = options.events;
    this.maxDepth = options.maxDepth;
  }
}

/**
 * One request's reading, with its decoder's options and caches: the parts spans and log records
 * share. A subclass reads its request's own messages and calls these for what they hold.
 */
export class ProtobufRequestReader implements AttributeValueDecoder {
  protected readonly r: WireReader;
  protected readonly bytes: Uint8Array;
  protected readonly attributeKeys: KeyMatcher | null;
  protected readonly selection: KeyedSelection | null;
  private readonly resourceKeys: KeyMatcher | null;
  protected readonly maxDepth: number;
  private readonly keyCache: StringCache;
  protected readonly valueCache: StringCache;
  private readonly keyValueCache: StringCache;
  private readonly scopeCache: StringCache;
  protected readonly traceIdCache: TraceIdCache;
  private readonly resources: ResourceCache;
  /** Whether the value being decoded is a key's (see keyValueCache). */
  private decodingKey = false;

  constructor(bytes: Uint8Array, decoder: ProtobufDecoderState) {
    this.bytes = bytes;
    this.r = new WireReader(bytes);
    this.attributeKeys = decoder.attributeKeys;
    this.selection = decoder.selection;
    this.resourceKeys = decoder.resourceKeys;
    this.maxDepth = decoder.maxDepth;
    this.keyCache = decoder.keyCache;
    this.valueCache = decoder.valueCache;
    this.keyValueCache = decoder.keyValueCache;
    this.scopeCache = decoder.scopeCache;
    this.traceIdCache = decoder.traceIdCache;
    this.resources = decoder.resourceCache;
  }

  /**
   * The resource of the ResourceSpans or ResourceLogs (`container`) at [pos, end); leaves the
   * reader at `end`. Protobuf does not order fields, and spans or records that precede the
   * `resource` field must still get its object: it is found first (one tag and length per field),
   * before the caller reads the scopes.
   */
  protected containerResource(end: number, container: ProtoMessage): Resource {
    const r = this.r;
    const start = r.pos;
    let resourceStart = -1;
    let resourceEnd = -1;
    let resourceFields = 0;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === CONTAINER_RESOURCE) {
        resourceEnd = r.lengthEnd(end);
        resourceStart = r.pos;
        resourceFields++;
        r.pos = resourceEnd;
      } else if (tag === CONTAINER_SCOPES) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, container);
    }
    // A resource written in several parts is merged, as protobuf merges repeated messages.
    const resource =
      resourceFields === 1
        ? this.cachedResource(resourceStart, resourceEnd)
        : this.mergedResource(start, end, container);
    if (this.selection !== null) this.selection.beginResource(resource);
    r.pos = end;
    return resource;
  }

  private cachedResource(start: number, end: number): Resource {
    const cached = this.resources.get(this.bytes, this.r.view, start, end);
    if (cached !== undefined) return cached;
    const resource: Resource = { attributes: createAttributes() };
    this.r.pos = start;
    this.resource(end, resource.attributes);
    return this.resources.set(this.bytes, this.r.view, start, end, resource);
  }

  /** Every `resource` field of the container at [start, end) into one (possibly empty) resource. */
  private mergedResource(start: number, end: number, container: ProtoMessage): Resource {
    const r = this.r;
    const resource: Resource = { attributes: createAttributes() };
    r.pos = start;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === CONTAINER_RESOURCE) this.resource(r.lengthEnd(end), resource.attributes);
      else if (tag === CONTAINER_SCOPES) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, container);
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

  protected scope(end: number, scope: InstrumentationScope): void {
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

  /** A resource attribute: all of them, or only those `keys` matches. */
  protected attribute(end: number, target: Attributes, keys: KeyMatcher | null): void {
    if (keys === null) this.keyValue(end, target, 0);
    else this.selectedKeyValue(end, target, keys, null);
  }

  /**
   * One KeyValue into `target`. The value is located while scanning (protobuf allows it before
   * the key) and decoded after.
   */
  protected keyValue(end: number, target: Attributes, depth: number): void {
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
  protected selectedKeyValue(
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
  protected string(end: number): string {
    const r = this.r;
    const text = decodeUtf8(this.bytes, r.pos, end);
    r.pos = end;
    return text;
  }
}

export function checkId(what: string, at: number, end: number, size: number): void {
  if (end - at !== size) {
    throw new KeyscopeError(
      OTLP_ID_LENGTH,
      `${what} must be ${size} bytes, received ${end - at} (at byte ${at})`,
    );
  }
}

/** A span without its trace or span id; `item` names what starts at `itemStart` (a span). */
export function missingId(what: string, size: number, itemStart: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_ID_LENGTH,
    `${what} must be ${size} bytes, received 0 (span at byte ${itemStart})`,
  );
}

export function zeroId(what: string, at: number): KeyscopeError {
  return new KeyscopeError(OTLP_ID_ZERO, `${what} must not be all zeros, received all zeros (at byte ${at})`);
}

function tooDeep(depth: number, maxDepth: number, at: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_NESTING,
    `attribute values must nest at most ${maxDepth} arrays/kvlists deep, received ${depth} (at byte ${at})`,
  );
}

/** Whether the `size` bytes at `at` (a multiple of four) are all zero; read a word at a time. */
export function isZero(view: DataView, at: number, size: number): boolean {
  for (let i = 0; i < size; i += 4) if (view.getInt32(at + i) !== 0) return false;
  return true;
}
