import { readFile } from 'node:fs/promises';
import { KeyscopeError } from '@keyscope/errors';
import { parse as parseYaml } from 'yaml';
import { ANALYZER_CONFIG_INVALID } from './errors.ts';

/**
 * `keyscope serve`'s configuration: defaults, overridden by a config file (YAML or JSON, same
 * shape), overridden by flags. Validated once, frozen, passed down as plain data.
 */
export interface ServeConfig {
  readonly api: {
    readonly host: string;
    /** The API server arrives in a later stage; the port is validated and kept until then. */
    readonly port: number;
  };
  readonly db: {
    /** SQLite file, or `:memory:`. */
    readonly path: string;
  };
  readonly otlp: {
    readonly http: {
      readonly host: string;
      readonly port: number;
      /** Applied before and after decompression; the OTLP spec recommends 20 MiB. */
      readonly bodyLimitBytes: number;
    };
    readonly grpc: {
      readonly host: string;
      readonly port: number;
      /** After decompression; past it grpc-js answers RESOURCE_EXHAUSTED. */
      readonly maxReceiveMessageBytes: number;
    };
    /** Shared by both receivers: they feed one pipeline. */
    readonly admission: {
      readonly maxInFlightRequests: number;
      readonly maxInFlightSpans: number;
      readonly retryAfterSeconds: number;
    };
  };
  readonly shutdown: {
    /** How long a stopping receiver waits for in-flight requests before closing their connections. */
    readonly drainTimeoutMillis: number;
  };
}

const MIB = 1024 * 1024;

export function defaultServeConfig(): ServeConfig {
  return deepFreeze({
    api: { host: '127.0.0.1', port: 8080 },
    db: { path: 'keyscope.db' },
    otlp: {
      http: { host: '127.0.0.1', port: 4318, bodyLimitBytes: 20 * MIB },
      grpc: { host: '127.0.0.1', port: 4317, maxReceiveMessageBytes: 4 * MIB },
      admission: { maxInFlightRequests: 16, maxInFlightSpans: 100_000, retryAfterSeconds: 5 },
    },
    shutdown: { drainTimeoutMillis: 10_000 },
  });
}

type Leaf = 'host' | 'port' | 'path' | 'positiveInteger';
interface Schema {
  readonly [key: string]: Leaf | Schema;
}

const SCHEMA: Schema = {
  api: { host: 'host', port: 'port' },
  db: { path: 'path' },
  otlp: {
    http: { host: 'host', port: 'port', bodyLimitBytes: 'positiveInteger' },
    grpc: { host: 'host', port: 'port', maxReceiveMessageBytes: 'positiveInteger' },
    admission: {
      maxInFlightRequests: 'positiveInteger',
      maxInFlightSpans: 'positiveInteger',
      retryAfterSeconds: 'positiveInteger',
    },
  },
  shutdown: { drainTimeoutMillis: 'positiveInteger' },
};

/**
 * Lays `overrides` (a partial config: any subset of the keys, at any depth) over `base` and
 * validates the result. Unknown keys and invalid values throw KS_ANALYZER_CONFIG_INVALID naming
 * the field, e.g. `otlp.http.port must be an integer from 0 to 65535, received "http"`.
 */
export function resolveServeConfig(
  overrides: unknown,
  base: ServeConfig = defaultServeConfig(),
): ServeConfig {
  const merged = merge(SCHEMA, base as unknown as Record<string, unknown>, overrides ?? {}, '') as unknown;
  const config = merged as ServeConfig;
  checkDistinctPorts(config);
  return deepFreeze(config);
}

/** Reads a YAML or JSON config file (JSON is YAML) into the partial config `resolveServeConfig` takes. */
export async function readConfigFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw invalid(`config file ${path} cannot be read: ${(error as Error).message}`, error);
  }
  try {
    return parseYaml(text);
  } catch (error) {
    throw invalid(`config file ${path} is not valid YAML or JSON: ${(error as Error).message}`, error);
  }
}

function merge(schema: Schema, base: Record<string, unknown>, overrides: unknown, path: string): unknown {
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) {
    throw invalid(`${path || 'the configuration'} must be a mapping, received ${describe(overrides)}`);
  }
  const known = Object.keys(schema);
  for (const key of Object.keys(overrides)) {
    if (!Object.hasOwn(schema, key)) {
      throw invalid(`'${path || '(root)'}' has an unknown key '${key}'; known keys: ${known.join(', ')}`);
    }
  }
  const result: Record<string, unknown> = {};
  for (const key of known) {
    const field = path ? `${path}.${key}` : key;
    const entry = schema[key] as Leaf | Schema;
    const value = (overrides as Record<string, unknown>)[key];
    if (typeof entry === 'string') {
      result[key] = value === undefined ? base[key] : checkLeaf(entry, value, field);
    } else {
      result[key] = merge(entry, base[key] as Record<string, unknown>, value ?? {}, field);
    }
  }
  return result;
}

function checkLeaf(leaf: Leaf, value: unknown, field: string): unknown {
  switch (leaf) {
    case 'port':
      if (Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 65_535) return value;
      throw invalid(`${field} must be an integer from 0 to 65535, received ${describe(value)}`);
    case 'positiveInteger':
      if (Number.isSafeInteger(value) && (value as number) > 0) return value;
      throw invalid(`${field} must be a positive integer, received ${describe(value)}`);
    case 'host':
    case 'path':
      if (typeof value === 'string' && value.trim() !== '') return value;
      throw invalid(`${field} must be a non-empty string, received ${describe(value)}`);
  }
}

function checkDistinctPorts(config: ServeConfig): void {
  const listeners = [
    ['api.port', config.api.host, config.api.port],
    ['otlp.http.port', config.otlp.http.host, config.otlp.http.port],
    ['otlp.grpc.port', config.otlp.grpc.host, config.otlp.grpc.port],
  ] as const;
  for (const [i, [field, host, port]] of listeners.entries()) {
    for (const [otherField, otherHost, otherPort] of listeners.slice(i + 1)) {
      if (port !== 0 && port === otherPort && host === otherHost) {
        throw invalid(`${field} and ${otherField} must differ, both are ${port}`);
      }
    }
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'a mapping' : String(value);
}

function invalid(message: string, cause?: unknown): KeyscopeError {
  return new KeyscopeError(ANALYZER_CONFIG_INVALID, message, cause === undefined ? undefined : { cause });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
