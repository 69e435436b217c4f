import { KeyscopeError } from '@keyscope/errors';
import { createAttributes } from './attributes.ts';
import { type KeyedAttributeSelection, keyedOnlyKeys, type ResolvedDecodeOptions } from './decode-options.ts';
import {
  OTLP_ID_LENGTH,
  OTLP_ID_ZERO,
  OTLP_JSON,
  OTLP_NESTING,
  OTLP_TIME_RANGE,
  OTLP_UTF8,
} from './errors.ts';
import type { Attributes, AttributeValue, InstrumentationScope, Resource } from './span.ts';
import { millisFromNanoNumber, millisFromNanoString, NANOS_NUMBER_LIMIT } from './time.ts';

/*
 * What the OTLP/JSON decoders of traces (decode-json.ts) and logs (decode-logs-json.ts) share:
 * the field readers of the JSON mapping (lowerCamelCase or snake_case names, null as absent,
 * int64 as strings or numbers, hex ids, base64 bytes) and `JsonRequestReader`.
 */

// A BOM at the start of a JSON body is an encoding marker (strip it, as HTTP clients may send one).
const jsonTextDecoder = new TextDecoder('utf-8', { fatal: true });

/** A span's attributes without those its keyed selection keeps on keyed spans only (itself when it has none). */
export function withoutWhenKeyed(attributes: Attributes, selection: KeyedAttributeSelection): Attributes {
  const dropped = keyedOnlyKeys(selection);
  const onlyWhenKeyed = (key: string) => dropped.has(key);
  const keys = Object.keys(attributes);
  if (!keys.some(onlyWhenKeyed)) return attributes;
  const kept = createAttributes();
  for (const key of keys) if (!onlyWhenKeyed(key)) kept[key] = attributes[key]!;
  return kept;
}

function utf8Text(bytes: Uint8Array): string {
  try {
    return jsonTextDecoder.decode(bytes);
  } catch (cause) {
    throw new KeyscopeError(OTLP_UTF8, 'JSON payload must be UTF-8, received invalid UTF-8 bytes', { cause });
  }
}

export type JsonObject = Record<string, unknown>;

/** The JSON value of a request body (text, or UTF-8 bytes); OTLP_JSON / OTLP_UTF8 when it is not one. */
export function parseJsonPayload(input: string | Uint8Array): unknown {
  const text = typeof input === 'string' ? input : utf8Text(input);
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new KeyscopeError(OTLP_JSON, `payload must be JSON, received ${(cause as Error).message}`, {
      cause,
    });
  }
}

/**
 * The parts of an OTLP/JSON request that spans and log records share: resources, scopes,
 * attributes and their values. A subclass reads its request's own messages.
 */
export class JsonRequestReader {
  protected readonly options: ResolvedDecodeOptions;

  constructor(options: ResolvedDecodeOptions) {
    this.options = options;
  }

  /** The `resource` of a ResourceSpans or ResourceLogs, with the attributes the options keep. */
  protected resource(message: JsonObject): Resource {
    const resource: Resource = { attributes: createAttributes() };
    const resourceMessage = optionalObject(message, 'resource', 'resource');
    if (resourceMessage !== undefined) {
      try {
        this.attributes(resourceMessage, resource.attributes, this.options.resourceKeys);
      } catch (error) {
        throw withPath(error, 'resource');
      }
    }
    return resource;
  }

  /** The `scope` of a ScopeSpans or ScopeLogs. */
  protected scope(message: JsonObject): InstrumentationScope {
    const scope: InstrumentationScope = { name: '', version: '' };
    const scopeMessage = optionalObject(message, 'scope', 'scope');
    if (scopeMessage !== undefined) {
      scope.name = string(scopeMessage, 'name', 'name');
      scope.version = string(scopeMessage, 'version', 'version');
    }
    return scope;
  }

  /** The `attributes` list of `message` into `target`, keeping only `keys` when given. */
  protected attributes(message: JsonObject, target: Attributes, keys: ReadonlySet<string> | null): void {
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
export function pick(message: JsonObject, camel: string, snake: string): unknown {
  const value = message[camel];
  if (value !== undefined && value !== null) return value;
  const other = message[snake];
  return other === null ? undefined : other;
}

export function asObject(value: unknown, what: string): JsonObject {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw wrongType(what, 'an object', value);
  }
  return value as JsonObject;
}

export function optionalObject(message: JsonObject, camel: string, snake: string): JsonObject | undefined {
  const value = pick(message, camel, snake);
  return value === undefined ? undefined : asObject(value, camel);
}

export function list(message: JsonObject, camel: string, snake: string): readonly unknown[] {
  const value = pick(message, camel, snake);
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw wrongType(camel, 'an array', value);
  return value;
}

export function string(message: JsonObject, camel: string, snake: string): string {
  const value = pick(message, camel, snake);
  if (value === undefined) return '';
  if (typeof value !== 'string') throw wrongType(camel, 'a string', value);
  return value;
}

export function enumValue<T extends number>(
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

export function time(message: JsonObject, camel: string, snake: string): number {
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

export function id(message: JsonObject, camel: string, snake: string, what: string, size: number): string {
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

/**
 * An id that may be absent: empty and all-zero ids are none (''), as a root span's parent or a
 * log record outside a trace; another length fails as `id` does.
 */
export function optionalId(
  message: JsonObject,
  camel: string,
  snake: string,
  what: string,
  size: number,
): string {
  const value = pick(message, camel, snake) ?? '';
  if (value === '') return '';
  if (typeof value !== 'string') throw wrongType(camel, 'a hex string', value);
  if (value.length !== size * 2) {
    throw new KeyscopeError(
      OTLP_ID_LENGTH,
      `${camel}: ${what} must be ${size} bytes (${size * 2} hex characters), received ${value.length} characters`,
    );
  }
  if (!HEX_ID.test(value)) throw wrongType(camel, 'a hex string', value);
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

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

export function wrongType(field: string, expected: string, received: unknown): KeyscopeError {
  return new KeyscopeError(OTLP_JSON, `${field} must be ${expected}, received ${describe(received)}`);
}

function tooDeep(depth: number, maxDepth: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_NESTING,
    `attribute values must nest at most ${maxDepth} arrays/kvlists deep, received ${depth}`,
  );
}

/** Prefixes the JSON path of the failing field on the way out; other errors pass untouched. */
export function withPath(error: unknown, segment: string): unknown {
  if (error instanceof KeyscopeError) error.message = `${segment}.${error.message}`;
  return error;
}
