import { readFile } from 'node:fs/promises';
import { type AlertsConfig, defaultAlertsConfig, parseAlertsConfig } from '@keyscope/alerts';
import { isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import { INTEGRITY_CHECKS, type IntegrityCheck } from '@keyscope/store';
import { parse as parseYaml } from 'yaml';
import type { ApiToken } from './api/auth.ts';
import { ANALYZER_CONFIG_INVALID } from './errors.ts';

/**
 * `keyscope serve`'s configuration: defaults, overridden by a config file (YAML or JSON, same
 * shape), overridden by `KEYSCOPE_*` environment variables, overridden by flags. Validated once,
 * frozen, passed down as plain data. docs/configuration.md lists every field.
 */
export interface ServeConfig {
  /**
   * Which part of the pipeline this process runs (docs/scaling.md). `all` without
   * `kafka.brokers` is the embedded service; `ingest`, `detect` and `serve` need Kafka.
   */
  readonly role: ServeRole;
  /** The scaled mode's Kafka clients and topics; unused while `brokers` is empty. */
  readonly kafka: KafkaConfig;
  readonly api: {
    readonly host: string;
    /** The HTTP API and the web page. */
    readonly port: number;
    /** Bearer tokens; none means the API answers loopback only (and refuses to listen elsewhere). */
    readonly tokens: readonly ApiToken[];
    /** Base URL alerts link to (`<publicUrl>/incidents/<id>`); '' means `http://<host>:<port>`. */
    readonly publicUrl: string;
    /** Where the web page links trace ids, e.g. `https://jaeger.example/trace/{traceId}`; '' for none. */
    readonly traceLinkTemplate: string;
  };
  /** The attribute mapping file (YAML or JSON, see packages/attempts/README.md); '' for the defaults. */
  readonly mapping: { readonly file: string };
  readonly detector: {
    readonly retryHorizonMillis: number;
    readonly maxKeys: number;
    /** Attempts kept per key; a key past it is a hot key (`keyscope_hot_keys`), its later attempts counted. */
    readonly maxAttemptsPerKey: number;
    readonly incidentBucketMillis: number;
    readonly quietPeriodMillis: number;
  };
  readonly retention: {
    /** Findings and resolved incidents are kept this long; attempts for the retry horizon. */
    readonly findingsDays: number;
  };
  /** What the pipeline refuses span by span (OTLP partial_success); docs/configuration.md. */
  readonly spans: SpansConfig;
  readonly alerts: AlertsConfig;
  /** keyscope's own traces (OpenTelemetry SDK), off unless an endpoint is set. */
  readonly telemetry: {
    /** OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces; '' turns self-tracing off. */
    readonly otlpEndpoint: string;
    /** Allow that endpoint to be keyscope's own receiver (it would then analyse itself). */
    readonly allowSelfIngest: boolean;
  };
  readonly db: {
    /** SQLite file, or `:memory:`. */
    readonly path: string;
    /** Read at open to refuse a damaged file: `quick` (quick_check), `full` (integrity_check) or `off`. */
    readonly integrityCheck: IntegrityCheck;
    /** Pages in use past which the oldest rows are purged (packages/store/src/size-bound.ts). */
    readonly maxBytes: number;
  };
  readonly otlp: {
    readonly http: {
      readonly host: string;
      readonly port: number;
      /** Applied before and after decompression; the OTLP spec recommends 20 MiB. */
      readonly bodyLimitBytes: number;
      /** From a request's first byte to the end of its headers; past it, 408 and the connection closes. */
      readonly headersTimeoutMillis: number;
      /** From a request's headers to the end of its body; past it, 408 and the connection closes. */
      readonly bodyTimeoutMillis: number;
      /** How long an idle keep-alive connection stays open. */
      readonly keepAliveTimeoutMillis: number;
      /** Bodies still arriving, over all connections, before they are admitted; past it, 503. */
      readonly maxBufferedBodyBytes: number;
    };
    readonly grpc: {
      readonly host: string;
      readonly port: number;
      /** After decompression; past it grpc-js answers RESOURCE_EXHAUSTED. */
      readonly maxReceiveMessageBytes: number;
      /** Calls one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
      readonly maxConcurrentStreams: number;
      /** The server pings each connection this often, and closes it if a ping goes unanswered for `keepaliveTimeoutMillis`. */
      readonly keepaliveTimeMillis: number;
      readonly keepaliveTimeoutMillis: number;
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

/**
 * The time window and size limits spans are held to (packages/attempts/src/span-limits.ts). A span
 * may start no earlier than the retry horizon plus `maxLateMillis` before the service clock, and
 * start and end no later than `maxFutureMillis` after it. Sizes are UTF-8 bytes.
 */
export interface SpansConfig {
  /** Clock skew between the sender's host and this one. */
  readonly maxFutureMillis: number;
  /** Beyond the retry horizon: exporter queues and retries deliver late. */
  readonly maxLateMillis: number;
  readonly maxKeyBytes: number;
  /** Service, node, cluster, region, zone, tenant and store names; operations are cut to it. */
  readonly maxNameBytes: number;
  /** Free text kept with a client attempt (its target and error), cut to it. */
  readonly maxValueBytes: number;
}

export type ServeRole = 'all' | 'ingest' | 'detect' | 'serve';
export const SERVE_ROLES: readonly ServeRole[] = ['all', 'ingest', 'detect', 'serve'];
/** The Collector kafka exporter's encodings keyscope reads (its `traces.encoding`). */
export type TracesEncoding = 'otlp_proto' | 'otlp_json';
export const TRACES_ENCODINGS: readonly TracesEncoding[] = ['otlp_proto', 'otlp_json'];

export interface KafkaConfig {
  /** `host:port` of the bootstrap brokers; empty means no Kafka. */
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** Create missing topics at startup (with the partitions below); otherwise a missing topic stops startup. */
  readonly createTopics: boolean;
  /** For topics keyscope creates. */
  readonly replicationFactor: number;
  /** The Collector's traces topic, read by the ingest role; '' to take OTLP over HTTP/gRPC only. */
  readonly traces: { readonly topic: string; readonly encoding: TracesEncoding; readonly groupId: string };
  /** Attempts keyed by idempotency key: the repartition the detect role's consumer group reads. */
  readonly attempts: { readonly topic: string; readonly partitions: number; readonly groupId: string };
  /** Compacted: findings and incidents, materialized by the serve role. */
  readonly incidents: { readonly topic: string; readonly partitions: number };
  /** Where undecodable records are copied before they are skipped; '' to only count and log them. */
  readonly deadLetter: { readonly topic: string };
  /** The detect role's per-partition SQLite files. */
  readonly stateDir: string;
  /** How long the group waits for a silent member (a killed process) before moving its partitions. */
  readonly sessionTimeoutMillis: number;
}

const MIB = 1024 * 1024;
const MAX_TIMER_MILLIS = 2_147_483_647;

export function defaultServeConfig(): ServeConfig {
  return deepFreeze({
    role: 'all',
    kafka: {
      brokers: [],
      clientId: 'keyscope',
      createTopics: true,
      replicationFactor: 1,
      traces: { topic: 'otlp_spans', encoding: 'otlp_proto', groupId: 'keyscope-ingest' },
      attempts: { topic: 'keyscope_attempts', partitions: 12, groupId: 'keyscope-detect' },
      incidents: { topic: 'keyscope_incidents', partitions: 3 },
      deadLetter: { topic: '' },
      stateDir: 'keyscope-partitions',
      sessionTimeoutMillis: 30_000,
    },
    api: { host: '127.0.0.1', port: 8080, tokens: [], publicUrl: '', traceLinkTemplate: '' },
    mapping: { file: '' },
    detector: {
      retryHorizonMillis: 24 * 60 * 60 * 1000,
      maxKeys: 1_000_000,
      maxAttemptsPerKey: 10_000,
      incidentBucketMillis: 60 * 60 * 1000,
      quietPeriodMillis: 30 * 60 * 1000,
    },
    retention: { findingsDays: 30 },
    spans: {
      maxFutureMillis: 5 * 60 * 1000,
      maxLateMillis: 60 * 60 * 1000,
      maxKeyBytes: 1024,
      maxNameBytes: 1024,
      maxValueBytes: 4096,
    },
    alerts: defaultAlertsConfig(),
    telemetry: { otlpEndpoint: '', allowSelfIngest: false },
    db: { path: 'keyscope.db', integrityCheck: 'quick', maxBytes: 10 * 1024 * MIB },
    otlp: {
      http: {
        host: '127.0.0.1',
        port: 4318,
        bodyLimitBytes: 20 * MIB,
        headersTimeoutMillis: 10_000,
        bodyTimeoutMillis: 10_000,
        // Longer than the 60 s idle timeout of common load balancers, so that they close first
        // and never send a request on a connection keyscope is closing.
        keepAliveTimeoutMillis: 65_000,
        maxBufferedBodyBytes: 64 * MIB,
      },
      grpc: {
        host: '127.0.0.1',
        port: 4317,
        maxReceiveMessageBytes: 4 * MIB,
        maxConcurrentStreams: 100,
        keepaliveTimeMillis: 120_000,
        keepaliveTimeoutMillis: 20_000,
      },
      admission: { maxInFlightRequests: 16, maxInFlightSpans: 100_000, retryAfterSeconds: 5 },
    },
    shutdown: { drainTimeoutMillis: 10_000 },
  });
}

type Leaf =
  | 'host'
  | 'port'
  | 'path'
  | 'positiveInteger'
  | 'timerMillis'
  | 'optionalText'
  | 'boolean'
  | 'tokens'
  | 'alerts'
  | 'role'
  | 'tracesEncoding'
  | 'brokers'
  | 'topic'
  | 'optionalTopic'
  | 'integrityCheck';
interface Schema {
  readonly [key: string]: Leaf | Schema;
}

const SCHEMA: Schema = {
  role: 'role',
  kafka: {
    brokers: 'brokers',
    clientId: 'path',
    createTopics: 'boolean',
    replicationFactor: 'positiveInteger',
    traces: { topic: 'optionalTopic', encoding: 'tracesEncoding', groupId: 'path' },
    attempts: { topic: 'topic', partitions: 'positiveInteger', groupId: 'path' },
    incidents: { topic: 'topic', partitions: 'positiveInteger' },
    deadLetter: { topic: 'optionalTopic' },
    stateDir: 'path',
    sessionTimeoutMillis: 'positiveInteger',
  },
  api: {
    host: 'host',
    port: 'port',
    tokens: 'tokens',
    publicUrl: 'optionalText',
    traceLinkTemplate: 'optionalText',
  },
  mapping: { file: 'optionalText' },
  detector: {
    retryHorizonMillis: 'positiveInteger',
    maxKeys: 'positiveInteger',
    maxAttemptsPerKey: 'positiveInteger',
    incidentBucketMillis: 'positiveInteger',
    quietPeriodMillis: 'positiveInteger',
  },
  retention: { findingsDays: 'positiveInteger' },
  spans: {
    maxFutureMillis: 'positiveInteger',
    maxLateMillis: 'positiveInteger',
    maxKeyBytes: 'positiveInteger',
    maxNameBytes: 'positiveInteger',
    maxValueBytes: 'positiveInteger',
  },
  alerts: 'alerts',
  telemetry: { otlpEndpoint: 'optionalText', allowSelfIngest: 'boolean' },
  db: { path: 'path', integrityCheck: 'integrityCheck', maxBytes: 'positiveInteger' },
  otlp: {
    http: {
      host: 'host',
      port: 'port',
      bodyLimitBytes: 'positiveInteger',
      headersTimeoutMillis: 'timerMillis',
      bodyTimeoutMillis: 'timerMillis',
      keepAliveTimeoutMillis: 'timerMillis',
      maxBufferedBodyBytes: 'positiveInteger',
    },
    grpc: {
      host: 'host',
      port: 'port',
      maxReceiveMessageBytes: 'positiveInteger',
      maxConcurrentStreams: 'positiveInteger',
      keepaliveTimeMillis: 'timerMillis',
      keepaliveTimeoutMillis: 'timerMillis',
    },
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
  checkExposure(config);
  return deepFreeze(config);
}

/** Without tokens the API is for this machine only: refuse to listen beyond loopback. */
function checkExposure(config: ServeConfig): void {
  const host = config.api.host;
  const loopback = host === 'localhost' || host === '::1' || host.startsWith('127.');
  if (!loopback && config.api.tokens.length === 0) {
    throw invalid(`api.host is ${host} but api.tokens is empty: configure tokens to listen beyond loopback`);
  }
}

/**
 * `KEYSCOPE_*` environment variables as a partial config: each names one field in upper snake
 * case (`KEYSCOPE_API_PORT` → api.port, `KEYSCOPE_DETECTOR_RETRY_HORIZON_MILLIS` →
 * detector.retryHorizonMillis), its value read as YAML (so numbers, booleans and JSON lists work).
 * An unknown variable is an error, like an unknown key in the file.
 */
export function envOverrides(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const fields = new Map<string, string[]>();
  const walk = (schema: Schema, path: string[]) => {
    for (const [key, entry] of Object.entries(schema)) {
      const next = [...path, key];
      if (typeof entry === 'string') {
        fields.set(
          `KEYSCOPE_${next.map((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_')}`,
          next,
        );
      } else walk(entry, next);
    }
  };
  walk(SCHEMA, []);
  const overrides: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('KEYSCOPE_') || raw === undefined || name === 'KEYSCOPE_CONFIG') continue;
    const path = fields.get(name);
    if (path === undefined) throw invalid(`environment variable ${name} is not a keyscope setting`);
    let value: unknown;
    try {
      value = parseYaml(raw);
    } catch {
      value = raw;
    }
    // A text field keeps its text even when it would read as a number or boolean.
    // An empty variable reads as YAML null: for a text field it means the empty text.
    if (
      (typeof value !== 'object' || value === null) &&
      ['host', 'path', 'optionalText', 'topic', 'optionalTopic'].includes(leafAt(path))
    )
      value = raw;
    let target = overrides;
    for (const part of path.slice(0, -1)) target = (target[part] ??= {}) as Record<string, unknown>;
    target[path[path.length - 1]!] = value;
  }
  return overrides;
}

function leafAt(path: string[]): Leaf {
  let entry: Leaf | Schema = SCHEMA;
  for (const part of path) entry = (entry as Schema)[part]!;
  return entry as Leaf;
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
    case 'timerMillis':
      // Node's timers fire at once for anything longer (about 24.8 days).
      if (Number.isSafeInteger(value) && (value as number) > 0 && (value as number) <= MAX_TIMER_MILLIS)
        return value;
      throw invalid(`${field} must be an integer from 1 to ${MAX_TIMER_MILLIS}, received ${describe(value)}`);
    case 'host':
    case 'path':
      if (typeof value === 'string' && value.trim() !== '') return value;
      throw invalid(`${field} must be a non-empty string, received ${describe(value)}`);
    case 'optionalText':
      if (typeof value === 'string') return value;
      throw invalid(`${field} must be a string, received ${describe(value)}`);
    case 'boolean':
      if (typeof value === 'boolean') return value;
      throw invalid(`${field} must be true or false, received ${describe(value)}`);
    case 'tokens':
      return checkTokens(value, field);
    case 'alerts':
      try {
        return parseAlertsConfig(value, field);
      } catch (error) {
        // One code for every configuration error, whichever package validated the section.
        if (isKeyscopeError(error)) throw invalid(error.message, error);
        throw error;
      }
    case 'role':
      if (SERVE_ROLES.includes(value as ServeRole)) return value;
      throw invalid(`${field} must be one of ${SERVE_ROLES.join(', ')}, received ${describe(value)}`);
    case 'tracesEncoding':
      if (TRACES_ENCODINGS.includes(value as TracesEncoding)) return value;
      throw invalid(`${field} must be one of ${TRACES_ENCODINGS.join(', ')}, received ${describe(value)}`);
    case 'integrityCheck':
      if (INTEGRITY_CHECKS.includes(value as IntegrityCheck)) return value;
      throw invalid(`${field} must be one of ${INTEGRITY_CHECKS.join(', ')}, received ${describe(value)}`);
    case 'brokers':
      return checkBrokers(value, field);
    case 'topic':
    case 'optionalTopic':
      // Kafka's own rule for topic names.
      if (
        typeof value === 'string' &&
        (/^[a-zA-Z0-9._-]{1,249}$/.test(value) || (leaf === 'optionalTopic' && value === ''))
      )
        return value;
      throw invalid(
        `${field} must be a Kafka topic name (letters, digits, '.', '_', '-'), received ${describe(value)}`,
      );
  }
}

/** A list of `host:port`, or one string of them separated by commas (as KEYSCOPE_KAFKA_BROKERS). */
function checkBrokers(value: unknown, field: string): string[] {
  const list =
    typeof value === 'string'
      ? value
          .split(',')
          .map((part) => part.trim())
          .filter((part) => part !== '')
      : value;
  if (!Array.isArray(list))
    throw invalid(`${field} must be a list of host:port, received ${describe(value)}`);
  return list.map((entry, index) => {
    const match = typeof entry === 'string' ? /^(.+):(\d{1,5})$/.exec(entry) : null;
    if (match === null || Number(match[2]) > 65_535) {
      throw invalid(`${field}[${index}] must be host:port, received ${describe(entry)}`);
    }
    return entry as string;
  });
}

function checkTokens(value: unknown, field: string): ApiToken[] {
  if (!Array.isArray(value)) throw invalid(`${field} must be a list, received ${describe(value)}`);
  return value.map((entry, index) => {
    const path = `${field}[${index}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw invalid(`${path} must be a mapping with token and role, received ${describe(entry)}`);
    }
    const known = ['token', 'role', 'tenant', 'name'];
    for (const key of Object.keys(entry)) {
      if (!known.includes(key))
        throw invalid(`'${path}' has an unknown key '${key}'; known keys: ${known.join(', ')}`);
    }
    const { token, role, tenant, name } = entry as Record<string, unknown>;
    if (typeof token !== 'string' || token.length < 16) {
      throw invalid(`${path}.token must be a string of at least 16 characters`);
    }
    if (role !== 'read' && role !== 'admin')
      throw invalid(`${path}.role must be read or admin, received ${describe(role)}`);
    for (const [key, text] of [
      ['tenant', tenant],
      ['name', name],
    ] as const) {
      if (text !== undefined && (typeof text !== 'string' || text === '')) {
        throw invalid(`${path}.${key} must be a non-empty string, received ${describe(text)}`);
      }
    }
    return {
      token,
      role,
      ...(tenant === undefined ? {} : { tenant: tenant as string }),
      ...(name === undefined ? {} : { name: name as string }),
    };
  });
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
