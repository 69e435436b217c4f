import { readFile } from 'node:fs/promises';
import { type AlertsConfig, defaultAlertsConfig, parseAlertsConfig } from '@keyscope/alerts';
import {
  boolean,
  type ConfigOf,
  configSchema,
  custom,
  type FieldPath,
  type Fields,
  integer,
  isKeyscopeError,
  KeyscopeError,
  list,
  type ObjectSpec,
  object,
  oneOf,
  text,
} from '@keyscope/errors';
import { INTEGRITY_CHECKS } from '@keyscope/store';
import { parse as parseYaml } from 'yaml';
import { ROLES } from './auth/auth.ts';
import { AUTH_FAILURE_BUDGET } from './auth/auth-failures.ts';
import { ANALYZER_CONFIG_INVALID } from './errors.ts';

const MIB = 1024 * 1024;
/** Node's timers fire at once for anything longer (about 24.8 days). */
const MAX_TIMER_MILLIS = 2_147_483_647;
/** Kafka's own rule for topic names. */
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/;
const TOPIC_EXPECTED = "a Kafka topic name (letters, digits, '.', '_', '-')";

export type ServeRole = 'all' | 'ingest' | 'detect' | 'serve';
export const SERVE_ROLES: readonly ServeRole[] = ['all', 'ingest', 'detect', 'serve'];
/** The Collector kafka exporter's encodings keyscope reads (its `traces.encoding`). */
export type TracesEncoding = 'otlp_proto' | 'otlp_json';
export const TRACES_ENCODINGS: readonly TracesEncoding[] = ['otlp_proto', 'otlp_json'];

const nonEmptyText = (value: string) => text({ default: value, nonEmpty: true });
const optionalText = () => text({ default: '' });
const port = (value: number) => integer({ default: value, min: 0, max: 65_535 });
const positiveInteger = (value: number) => integer({ default: value });
const timerMillis = (value: number) => integer({ default: value, max: MAX_TIMER_MILLIS });
const topic = (value: string) => text({ default: value, accepts: TOPIC_NAME, expected: TOPIC_EXPECTED });
/** A topic name, or '' for none. */
const optionalTopic = (value: string) =>
  text({ default: value, accepts: (name) => name === '' || TOPIC_NAME.test(name), expected: TOPIC_EXPECTED });

const API_TOKEN = object(
  {
    /** The bearer token itself (keep config files private). */
    token: text({
      required: true,
      secret: true,
      accepts: (token) => token.length >= 16,
      expected: 'a string of at least 16 characters',
    }),
    role: oneOf(ROLES, { required: true }),
    tenant: text({ optional: true, nonEmpty: true }),
    name: text({ optional: true, nonEmpty: true }),
  },
  { expected: 'a mapping with token and role' },
);

/**
 * `keyscope serve`'s configuration: defaults, overridden by a config file (YAML or JSON, same
 * shape), overridden by `KEYSCOPE_*` environment variables, overridden by flags. Validated once,
 * frozen, passed down as plain data. docs/configuration.md lists every field.
 */
const SERVE = configSchema(
  {
    /**
     * Which part of the pipeline this process runs (docs/scaling.md). `all` without
     * `kafka.brokers` is the embedded service; `ingest`, `detect` and `serve` need Kafka.
     */
    role: oneOf(SERVE_ROLES, { default: 'all' }),
    /** The scaled mode's Kafka clients and topics; unused while `brokers` is empty. */
    kafka: object({
      /** `host:port` of the bootstrap brokers; empty means no Kafka. */
      brokers: custom(checkBrokers, { default: [] }),
      clientId: nonEmptyText('keyscope'),
      /** Create missing topics at startup (with the partitions below); otherwise a missing topic stops startup. */
      createTopics: boolean({ default: true }),
      /** For topics keyscope creates. */
      replicationFactor: positiveInteger(1),
      /** The Collector's traces topic, read by the ingest role; '' to take OTLP over HTTP/gRPC only. */
      traces: object({
        topic: optionalTopic('otlp_spans'),
        encoding: oneOf(TRACES_ENCODINGS, { default: 'otlp_proto' }),
        groupId: nonEmptyText('keyscope-ingest'),
      }),
      /** Attempts keyed by idempotency key: the repartition the detect role's consumer group reads. */
      attempts: object({
        topic: topic('keyscope_attempts'),
        partitions: positiveInteger(12),
        groupId: nonEmptyText('keyscope-detect'),
      }),
      /** Compacted: findings and incidents, materialized by the serve role. */
      incidents: object({ topic: topic('keyscope_incidents'), partitions: positiveInteger(3) }),
      /** Where undecodable records are copied before they are skipped; '' to only count and log them. */
      deadLetter: object({ topic: optionalTopic('') }),
      /** The detect role's per-partition SQLite files. */
      stateDir: nonEmptyText('keyscope-partitions'),
      /** How long the group waits for a silent member (a killed process) before moving its partitions. */
      sessionTimeoutMillis: positiveInteger(30_000),
    }),
    api: object({
      host: nonEmptyText('127.0.0.1'),
      /** The HTTP API and the web page. */
      port: port(8080),
      /** Bearer tokens; none means the API answers loopback only (and refuses to listen elsewhere). */
      tokens: list(API_TOKEN, { default: [] }),
      /**
       * Unknown tokens one client address (an IPv6 /64) may present: `burst` at once, then one per
       * `refillMillis`; past that it gets 429 (`KS_API_AUTH_THROTTLED`). At most `maxAddresses`
       * addresses are held, the least recently seen evicted first. Applies while tokens are set.
       */
      authFailureBudget: object({
        burst: positiveInteger(AUTH_FAILURE_BUDGET.burst),
        refillMillis: timerMillis(AUTH_FAILURE_BUDGET.refillMillis),
        maxAddresses: positiveInteger(AUTH_FAILURE_BUDGET.maxAddresses),
      }),
      /** Base URL alerts link to (`<publicUrl>/incidents/<id>`); '' means `http://<host>:<port>`. */
      publicUrl: optionalText(),
      /** Where the web page links trace ids, e.g. `https://jaeger.example/trace/{traceId}`; '' for none. */
      traceLinkTemplate: optionalText(),
    }),
    /** The attribute mapping file (YAML or JSON, see packages/attempts/README.md); '' for the defaults. */
    mapping: object({ file: optionalText() }),
    detector: object({
      retryHorizonMillis: positiveInteger(24 * 60 * 60 * 1000),
      maxKeys: positiveInteger(1_000_000),
      /** Attempts kept per key; a key past it is a hot key (`keyscope_hot_keys`), its later attempts counted. */
      maxAttemptsPerKey: positiveInteger(10_000),
      /** Keyed attempts the evidence coverage join holds until final; past it the oldest are counted early. */
      maxCoverageEntries: positiveInteger(1_000_000),
      /** Evidence coverage is counted over one key in this many, by a hash of the key; 1 counts every key. */
      coverageKeysOneIn: positiveInteger(8),
      /** Stores (and nodes) a finding lists; past it `storesTotal` / `nodesTotal` count the rest. */
      maxStoresPerFinding: positiveInteger(100),
      /** Stores (and nodes) an incident lists; past it `storesTotal` / `nodesTotal` count the rest. */
      maxStoresPerIncident: positiveInteger(1_000),
      /** Tiers (service × operation) the scope report keeps one by one; past it, one overflow bucket. */
      maxTiers: positiveInteger(10_000),
      /**
       * Repeats of a key on one node, judged from HTTP responses alone (counted over the
       * coverage's sample of keys), past which a tier that never showed a replay is reported with
       * its replay header missing (`keyscope_replay_header_missing`).
       */
      replayHeaderMinRepeats: positiveInteger(10),
      incidentBucketMillis: positiveInteger(60 * 60 * 1000),
      quietPeriodMillis: positiveInteger(30 * 60 * 1000),
    }),
    retention: object({
      /** Findings and resolved incidents are kept this long; attempts for the retry horizon. */
      findingsDays: positiveInteger(30),
    }),
    /**
     * What the pipeline refuses span by span (OTLP partial_success): the time window and size
     * limits of packages/attempts/src/span-limits.ts. A span may start no earlier than the retry
     * horizon plus `maxLateMillis` before the service clock, and start and end no later than
     * `maxFutureMillis` after it. Sizes are UTF-8 bytes.
     */
    spans: object({
      /** Clock skew between the sender's host and this one. */
      maxFutureMillis: positiveInteger(5 * 60 * 1000),
      /** Beyond the retry horizon: exporter queues and retries deliver late. */
      maxLateMillis: positiveInteger(60 * 60 * 1000),
      maxKeyBytes: positiveInteger(1024),
      /** Service, node, cluster, region, zone, tenant and store names; operations are cut to it. */
      maxNameBytes: positiveInteger(1024),
      /** Free text kept with a client attempt (its target and error), cut to it. */
      maxValueBytes: positiveInteger(4096),
    }),
    alerts: custom(checkAlerts, { default: defaultAlertsConfig() }),
    /** keyscope's own traces (OpenTelemetry SDK), off unless an endpoint is set. */
    telemetry: object({
      /** OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces; '' turns self-tracing off. */
      otlpEndpoint: optionalText(),
      /** Allow that endpoint to be keyscope's own receiver (it would then analyse itself). */
      allowSelfIngest: boolean({ default: false }),
    }),
    db: object({
      /** SQLite file, or `:memory:`. */
      path: nonEmptyText('keyscope.db'),
      /** Read at open to refuse a damaged file: `quick` (quick_check), `full` (integrity_check) or `off`. */
      integrityCheck: oneOf(INTEGRITY_CHECKS, { default: 'quick' }),
      /** Pages in use past which the oldest rows are purged (packages/store/src/size-bound.ts). */
      maxBytes: positiveInteger(10 * 1024 * MIB),
    }),
    otlp: object({
      http: object({
        host: nonEmptyText('127.0.0.1'),
        port: port(4318),
        /** Applied before and after decompression; the OTLP spec recommends 20 MiB. */
        bodyLimitBytes: positiveInteger(20 * MIB),
        /** From a request's first byte to the end of its headers; past it, 408 and the connection closes. */
        headersTimeoutMillis: timerMillis(10_000),
        /** From a request's headers to the end of its body; past it, 408 and the connection closes. */
        bodyTimeoutMillis: timerMillis(10_000),
        /**
         * How long an idle keep-alive connection stays open. Longer than the 60 s idle timeout of
         * common load balancers, so that they close first and never send a request on a
         * connection keyscope is closing.
         */
        keepAliveTimeoutMillis: timerMillis(65_000),
        /** Bodies still arriving, over all connections, before they are admitted; past it, 503. */
        maxBufferedBodyBytes: positiveInteger(64 * MIB),
      }),
      grpc: object({
        host: nonEmptyText('127.0.0.1'),
        port: port(4317),
        /** As the length prefix declares it and after decompression; past it, RESOURCE_EXHAUSTED. */
        maxReceiveMessageBytes: positiveInteger(4 * MIB),
        /**
         * From a call's headers to the end of its message (a call that sends nothing included);
         * past it, DEADLINE_EXCEEDED and the call ends.
         */
        messageTimeoutMillis: timerMillis(10_000),
        /** Messages still arriving, over all calls and connections, counted as bytes arrive; past it, UNAVAILABLE. */
        maxBufferedMessageBytes: positiveInteger(64 * MIB),
        /** Calls one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS). */
        maxConcurrentStreams: positiveInteger(100),
        /** The server pings each connection this often, and closes it if a ping goes unanswered for `keepaliveTimeoutMillis`. */
        keepaliveTimeMillis: timerMillis(120_000),
        keepaliveTimeoutMillis: timerMillis(20_000),
      }),
      /** Shared by both receivers: they feed one pipeline. */
      admission: object({
        maxInFlightRequests: positiveInteger(16),
        maxInFlightSpans: positiveInteger(100_000),
        retryAfterSeconds: positiveInteger(5),
      }),
    }),
    /**
     * The OTLP payloads the receivers acknowledge, kept as gzipped OTLP/JSON lines that `keyscope
     * analyze` reads (receivers/archive-files.ts); off while `path` is ''.
     */
    archive: object({
      /** The folder the files go to, created if missing; '' turns the archive off. */
      path: optionalText(),
      /** Archive files on disk, the one being written included; past it the oldest are deleted. */
      maxBytes: positiveInteger(10 * 1024 * MIB),
      /** A file is finished (renamed to its `.jsonl.gz` name) before it would pass this size… */
      fileBytes: positiveInteger(64 * MIB),
      /** …or once it is this old, so that a quiet service's payloads become readable. */
      fileMillis: timerMillis(60_000),
      /** Payloads handed to the archive thread and not yet written; past it, payloads are not archived (counted). */
      maxQueuedBytes: positiveInteger(64 * MIB),
    }),
    shutdown: object({
      /** How long a stopping receiver waits for in-flight requests before closing their connections. */
      drainTimeoutMillis: positiveInteger(10_000),
    }),
  },
  { errors: ANALYZER_CONFIG_INVALID, blankSectionsKeepValues: true },
);

export type ServeConfig = ConfigOf<typeof SERVE.fields>;
export type KafkaConfig = ServeConfig['kafka'];
export type SpansConfig = ServeConfig['spans'];

export function defaultServeConfig(): ServeConfig {
  return SERVE.defaults;
}

/**
 * Lays `overrides` (a partial config: any subset of the keys, at any depth) over `base` and
 * validates the result. Unknown keys and invalid values throw KS_ANALYZER_CONFIG_INVALID naming
 * the field, e.g. `otlp.http.port must be an integer from 0 to 65535, received "http"`.
 */
export function resolveServeConfig(
  overrides: unknown,
  base: ServeConfig = defaultServeConfig(),
): ServeConfig {
  const config = SERVE.parse(overrides ?? {}, { base });
  checkDistinctPorts(config);
  checkExposure(config);
  checkMetricsTokens(config);
  checkArchive(config);
  return config;
}

/** A `metrics` token reads /metrics only, which covers every tenant: a tenant would leave it nothing. */
function checkMetricsTokens(config: ServeConfig): void {
  for (const [index, entry] of config.api.tokens.entries()) {
    if (entry.role === 'metrics' && entry.tenant !== undefined) {
      throw invalid(
        `api.tokens[${index}] has role metrics and tenant ${entry.tenant}: /metrics covers every tenant, so a metrics token has no tenant`,
      );
    }
  }
}

/** A file larger than the whole archive would be deleted as soon as it is finished. */
function checkArchive(config: ServeConfig): void {
  const { maxBytes, fileBytes } = config.archive;
  if (fileBytes > maxBytes) {
    throw invalid(`archive.fileBytes must be at most archive.maxBytes (${maxBytes}), received ${fileBytes}`);
  }
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
  const settings = envSettings();
  const overrides: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('KEYSCOPE_') || raw === undefined || name === 'KEYSCOPE_CONFIG') continue;
    const setting = settings.get(name);
    if (setting === undefined) throw invalid(`environment variable ${name} is not a keyscope setting`);
    let value: unknown;
    try {
      value = parseYaml(raw);
    } catch {
      value = raw;
    }
    // A text field keeps its text even when it would read as a number or boolean.
    // An empty variable reads as YAML null: for a text field it means the empty text.
    if ((typeof value !== 'object' || value === null) && setting.text) value = raw;
    const { path } = setting;
    let target = overrides;
    for (const part of path.slice(0, -1)) target = (target[part] ??= {}) as Record<string, unknown>;
    target[path[path.length - 1]!] = value;
  }
  return overrides;
}

/** Each `KEYSCOPE_*` variable's field. */
function envSettings(): Map<string, { path: string[]; text: boolean }> {
  const settings = new Map<string, { path: string[]; text: boolean }>();
  const walk = (fields: Fields, path: string[]) => {
    for (const [key, field] of Object.entries(fields)) {
      const next = [...path, key];
      if (field.kind === 'object') walk((field as ObjectSpec<Fields>).fields, next);
      else {
        const name = next.map((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
        settings.set(`KEYSCOPE_${name}`, { path: next, text: field.kind === 'text' });
      }
    }
  };
  walk(SERVE.fields, []);
  return settings;
}

/**
 * `envOverrides(env)` laid over `base`. An invalid value names its variable besides its field
 * (`environment variable KEYSCOPE_API_PORT: api.port must be an integer …`): the variable is what
 * the operator set, and where the fix goes.
 */
export function resolveEnvConfig(env: NodeJS.ProcessEnv, base: ServeConfig): ServeConfig {
  const overrides = envOverrides(env);
  try {
    return resolveServeConfig(overrides, base);
  } catch (error) {
    if (!isKeyscopeError(error)) throw error;
    // The message starts with the field it is about (config-schema's FieldPath names it so).
    const variable = [...envSettings()]
      .filter(([name]) => env[name] !== undefined)
      .map(([name, { path }]) => ({ name, field: path.join('.') }))
      .find(
        ({ field }) => error.message.startsWith(field) && ' .['.includes(error.message[field.length] ?? '-'),
      );
    if (variable === undefined) throw error;
    throw invalid(`environment variable ${variable.name}: ${error.message}`, error);
  }
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

/** A list of `host:port`, or one string of them separated by commas (as KEYSCOPE_KAFKA_BROKERS). */
function checkBrokers(value: unknown, at: FieldPath): readonly string[] {
  const list =
    typeof value === 'string'
      ? value
          .split(',')
          .map((part) => part.trim())
          .filter((part) => part !== '')
      : value;
  if (!Array.isArray(list)) throw at.wrongType('a list of host:port', value);
  return list.map((entry, index) => {
    const match = typeof entry === 'string' ? /^(.+):(\d{1,5})$/.exec(entry) : null;
    if (match === null || Number(match[2]) > 65_535) throw at.item(index).invalid('host:port', entry);
    return entry as string;
  });
}

/** One code for every configuration error, whichever package validated the section. */
function checkAlerts(value: unknown, at: FieldPath): AlertsConfig {
  try {
    return parseAlertsConfig(value, at.name);
  } catch (error) {
    if (isKeyscopeError(error)) throw invalid(error.message, error);
    throw error;
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

function invalid(message: string, cause?: unknown): KeyscopeError {
  return new KeyscopeError(ANALYZER_CONFIG_INVALID, message, cause === undefined ? undefined : { cause });
}
