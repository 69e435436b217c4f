import { KeyscopeError } from '@keyscope/errors';
import { carriesKey, createAttributes } from './attributes.ts';
import {
  type DecodedTraces,
  type DecodeOptions,
  keyedNotLinkedKeys,
  keyedOnlyKeys,
  type ResolvedDecodeOptions,
  resolveDecodeOptions,
} from './decode-options.ts';
import {
  OTLP_ID_LENGTH,
  OTLP_ID_ZERO,
  OTLP_JSON,
  OTLP_NESTING,
  OTLP_TIME_RANGE,
  OTLP_UTF8,
} from './errors.ts';
import type {
  Attributes,
  AttributeValue,
  InstrumentationScope,
  Resource,
  Span,
  SpanEvent,
  SpanKind,
  StatusCode,
} from './span.ts';
import { millisFromNanoNumber, millisFromNanoString, NANOS_NUMBER_LIMIT } from './time.ts';

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
  const text = typeof input === 'string' ? input : utf8Text(input);
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch (cause) {
    throw new KeyscopeError(OTLP_JSON, `payload must be JSON, received ${(cause as Error).message}`, {
      cause,
    });
  }
  const decoder = new JsonTraceDecoder(resolved);
  const spans = decoder.request(root);
  return { spans, spanCount: decoder.spanCount };
}

// A BOM at the start of a JSON body is an encoding marker (strip it, as HTTP clients may send one).
const jsonTextDecoder = new TextDecoder('utf-8', { fatal: true });

/** A span's attributes without the `dropped` keys (itself when it has none of them). */
function without(attributes: Attributes, dropped: ReadonlySet<string>): Attributes {
  const isDropped = (key: string) => dropped.has(key);
  const keys = Object.keys(attributes);
  if (!keys.some(isDropped)) return attributes;
  const kept = createAttributes();
  for (const key of keys) if (!isDropped(key)) kept[key] = attributes[key]!;
  return kept;
}

function utf8Text(bytes: Uint8Array): string {
  try {
    return jsonTextDecoder.decode(bytes);
  } catch (cause) {
    throw new KeyscopeError(OTLP_UTF8, 'JSON payload must be UTF-8, received invalid UTF-8 bytes', { cause });
  }
}

type JsonObject = Record<string, unknown>;

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

class JsonTraceDecoder {
  private readonly options: ResolvedDecodeOptions;
  private readonly spans: Span[] = [];
  /** Spans read, returned or not. */
  spanCount = 0;

  constructor(options: ResolvedDecodeOptions) {
    this.options = options;
  }

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
    const resource: Resource = { attributes: createAttributes() };
    const resourceMessage = optionalObject(message, 'resource', 'resource');
    if (resourceMessage !== undefined) {
      try {
        this.attributes(resourceMessage, resource.attributes, this.options.resourceKeys);
      } catch (error) {
        throw withPath(error, 'resource');
      }
    }
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
    const scope: InstrumentationScope = { name: '', version: '' };
    const scopeMessage = optionalObject(message, 'scope', 'scope');
    if (scopeMessage !== undefined) {
      scope.name = string(scopeMessage, 'name', 'name');
      scope.version = string(scopeMessage, 'version', 'version');
    }
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
    let parentSpanId = parentId(message);
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

  /** The `attributes` list of `message` into `target`, keeping only `keys` when given. */
  private attributes(message: JsonObject, target: Attributes, keys: ReadonlySet<string> | null): void {
    const keyValues = list(message, 'attributes', 'attributes');
    for (let i = 0; i < keyValues.length; i++) {
      try {
        this.keyValue(asObject(keyValues[i], 'item'), target, keys, 0);
      } catch (error) {
        throw withPath(error, `attributes[${i}]`);
      }
    }
  }

  private keyValue(
    keyValue: JsonObject,
    target: Attributes,
    keys: ReadonlySet<string> | null,
    depth: number,
  ) {
    const key = string(keyValue, 'key', 'key');
    if (keys !== null && !keys.has(key)) return;
    const value = keyValue.value;
    target[key] = value === undefined || value === null ? null : this.anyValue(value, depth);
  }

  private anyValue(input: unknown, depth: number): AttributeValue {
    const value = asObject(input, 'value');
    let v: unknown;
    if ((v = pick(value, 'stringValue', 'string_value')) !== undefined) {
      if (typeof v !== 'string') throw wrongType('stringValue', 'a string', v);
      return v;
    }
    if ((v = pick(value, 'intValue', 'int_value')) !== undefined) return int64(v);
    if ((v = pick(value, 'boolValue', 'bool_value')) !== undefined) {
      if (typeof v !== 'boolean') throw wrongType('boolValue', 'true or false', v);
      return v;
    }
    if ((v = pick(value, 'doubleValue', 'double_value')) !== undefined) return double(v);
    if ((v = pick(value, 'arrayValue', 'array_value')) !== undefined) {
      if (depth + 1 > this.options.maxDepth) throw tooDeep(depth + 1, this.options.maxDepth);
      const values = list(asObject(v, 'arrayValue'), 'values', 'values');
      const out: AttributeValue[] = new Array(values.length);
      for (let i = 0; i < values.length; i++) {
        const item = values[i];
        try {
          out[i] = item === null ? null : this.anyValue(item, depth + 1);
        } catch (error) {
          throw withPath(error, `arrayValue.values[${i}]`);
        }
      }
      return out;
    }
    if ((v = pick(value, 'kvlistValue', 'kvlist_value')) !== undefined) {
      if (depth + 1 > this.options.maxDepth) throw tooDeep(depth + 1, this.options.maxDepth);
      const values = list(asObject(v, 'kvlistValue'), 'values', 'values');
      const out: Attributes = createAttributes();
      for (let i = 0; i < values.length; i++) {
        try {
          this.keyValue(asObject(values[i], 'item'), out, null, depth + 1);
        } catch (error) {
          throw withPath(error, `kvlistValue.values[${i}]`);
        }
      }
      return out;
    }
    if ((v = pick(value, 'bytesValue', 'bytes_value')) !== undefined) return base64(v);
    return null;
  }
}

/** A field by its lowerCamelCase or snake_case name; null counts as absent, as in protobuf JSON. */
function pick(message: JsonObject, camel: string, snake: string): unknown {
  const value = message[camel];
  if (value !== undefined && value !== null) return value;
  const other = message[snake];
  return other === null ? undefined : other;
}

function asObject(value: unknown, what: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw wrongType(what, 'an object', value);
  }
  return value as JsonObject;
}

function optionalObject(message: JsonObject, camel: string, snake: string): JsonObject | undefined {
  const value = pick(message, camel, snake);
  return value === undefined ? undefined : asObject(value, camel);
}

function list(message: JsonObject, camel: string, snake: string): readonly unknown[] {
  const value = pick(message, camel, snake);
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw wrongType(camel, 'an array', value);
  return value;
}

function string(message: JsonObject, camel: string, snake: string): string {
  const value = pick(message, camel, snake);
  if (value === undefined) return '';
  if (typeof value !== 'string') throw wrongType(camel, 'a string', value);
  return value;
}

function enumValue<T extends number>(
  message: JsonObject,
  camel: string,
  snake: string,
  names: Record<string, T>,
  max: number,
): T {
  const value = pick(message, camel, snake);
  if (value === undefined) return 0 as T;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw wrongType(camel, 'an integer or an enum name', value);
    return (value >= 0 && value <= max ? value : 0) as T;
  }
  if (typeof value === 'string' && Object.hasOwn(names, value)) return names[value]!;
  throw wrongType(camel, `an integer or one of ${Object.keys(names).join(', ')}`, value);
}

function time(message: JsonObject, camel: string, snake: string): number {
  const value = pick(message, camel, snake);
  if (value === undefined) return 0;
  let millis = Number.NaN;
  if (typeof value === 'string') millis = millisFromNanoString(value);
  else if (typeof value === 'number' && Number.isInteger(value)) {
    millis =
      value >= 0 && value < NANOS_NUMBER_LIMIT ? millisFromNanoNumber(value) : Number.POSITIVE_INFINITY;
  }
  if (Number.isNaN(millis)) throw wrongType(camel, 'unsigned nanoseconds as a decimal string', value);
  if (millis === Number.POSITIVE_INFINITY) {
    throw new KeyscopeError(
      OTLP_TIME_RANGE,
      `${camel} must be unsigned 64-bit nanoseconds (0 to 18446744073709551615), received ${describe(value)}`,
    );
  }
  return millis;
}

const HEX_ID = /^[0-9a-fA-F]*$/;
const LOWER = /[A-F]/;
const ZERO_ID = /^0+$/;

function id(message: JsonObject, camel: string, snake: string, what: string, size: number): string {
  const value = pick(message, camel, snake) ?? '';
  if (typeof value !== 'string') throw wrongType(camel, 'a hex string', value);
  if (value.length !== size * 2) {
    throw new KeyscopeError(
      OTLP_ID_LENGTH,
      `${camel}: ${what} must be ${size} bytes (${size * 2} hex characters), received ${value.length} characters`,
    );
  }
  if (!HEX_ID.test(value)) throw wrongType(camel, 'a hex string', value);
  if (ZERO_ID.test(value)) {
    throw new KeyscopeError(OTLP_ID_ZERO, `${camel}: ${what} must not be all zeros, received all zeros`);
  }
  return LOWER.test(value) ? value.toLowerCase() : value;
}

function parentId(message: JsonObject): string {
  const value = pick(message, 'parentSpanId', 'parent_span_id') ?? '';
  if (value === '') return '';
  if (typeof value !== 'string') throw wrongType('parentSpanId', 'a hex string', value);
  if (value.length !== 16) {
    throw new KeyscopeError(
      OTLP_ID_LENGTH,
      `parentSpanId: parent span id must be 8 bytes (16 hex characters), received ${value.length} characters`,
    );
  }
  if (!HEX_ID.test(value)) throw wrongType('parentSpanId', 'a hex string', value);
  if (ZERO_ID.test(value)) return '';
  return LOWER.test(value) ? value.toLowerCase() : value;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/** int_value as span.ts wants it: a number when it is a safe integer, otherwise a bigint. */
function int64(value: unknown): number | bigint {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw wrongType('intValue', 'an integer', value);
    if (Number.isSafeInteger(value)) return value;
    const big = BigInt(value);
    if (big < INT64_MIN || big > INT64_MAX) throw wrongType('intValue', 'an int64', value);
    return big;
  }
  if (typeof value !== 'string' || !DECIMAL_INTEGER.test(value)) {
    throw wrongType('intValue', 'an int64 as a decimal string', value);
  }
  // 15 digits are always below 2^53; longer strings go through BigInt for an exact range check.
  if (value.length <= 15) {
    const small = Number(value);
    return small === 0 ? 0 : small; // "-0" is the integer 0, as in protobuf
  }
  const big = BigInt(value);
  if (big < INT64_MIN || big > INT64_MAX) throw wrongType('intValue', 'an int64', value);
  const asNumber = Number(big);
  return Number.isSafeInteger(asNumber) ? asNumber : big;
}

const NUMERIC = /^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$/;

function double(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    if (value === 'NaN') return Number.NaN;
    if (value === 'Infinity') return Number.POSITIVE_INFINITY;
    if (value === '-Infinity') return Number.NEGATIVE_INFINITY;
    if (NUMERIC.test(value)) return Number(value);
  }
  throw wrongType('doubleValue', 'a number, "NaN", "Infinity" or "-Infinity"', value);
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function base64(value: unknown): Uint8Array {
  if (typeof value !== 'string' || !BASE64.test(value) || value.replace(/=+$/, '').length % 4 === 1) {
    throw wrongType('bytesValue', 'base64', value);
  }
  // A plain Uint8Array like the protobuf decoder returns, not a Buffer view of Node's pool.
  return new Uint8Array(Buffer.from(value, 'base64'));
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

function wrongType(field: string, expected: string, received: unknown): KeyscopeError {
  return new KeyscopeError(OTLP_JSON, `${field} must be ${expected}, received ${describe(received)}`);
}

function tooDeep(depth: number, maxDepth: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_NESTING,
    `attribute values must nest at most ${maxDepth} arrays/kvlists deep, received ${depth}`,
  );
}

/** Prefixes the JSON path of the failing field on the way out; other errors pass untouched. */
function withPath(error: unknown, segment: string): unknown {
  if (error instanceof KeyscopeError) error.message = `${segment}.${error.message}`;
  return error;
}
