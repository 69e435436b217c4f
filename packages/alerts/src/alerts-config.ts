import type { Severity } from '@keyscope/detector';
import { type ErrorDefinition, KeyscopeError } from '@keyscope/errors';
import {
  ALERTS_CONFIG_DUPLICATE_NAME,
  ALERTS_CONFIG_INVALID_VALUE,
  ALERTS_CONFIG_MISSING,
  ALERTS_CONFIG_UNKNOWN_KEY,
  ALERTS_CONFIG_WRONG_TYPE,
} from './errors.ts';
import { SEVERITIES } from './severity-order.ts';

export type SinkType = 'alertmanager' | 'pagerduty' | 'slack' | 'webhook';

export const SINK_TYPES: readonly SinkType[] = ['alertmanager', 'pagerduty', 'slack', 'webhook'];

interface SinkCommon {
  /** Identifies the sink's deliveries in the outbox and its counters; defaults to the type. */
  readonly name: string;
  readonly url: string;
  /** Incidents below this severity do not reach the sink (default `high`: warnings do not page). */
  readonly minSeverity: Severity;
}

export interface AlertmanagerSinkConfig extends SinkCommon {
  readonly type: 'alertmanager';
  /**
   * Alertmanager forgets an alert that is not re-sent (it sets `endsAt` to the time it last heard
   * of it plus a few intervals), so open incidents are re-posted this often.
   */
  readonly resendIntervalMillis: number;
}

export interface PagerDutySinkConfig extends SinkCommon {
  readonly type: 'pagerduty';
  /** The 32-character integration key of an Events API v2 integration. */
  readonly routingKey: string;
}

export interface SlackSinkConfig extends SinkCommon {
  readonly type: 'slack';
}

export interface WebhookSinkConfig extends SinkCommon {
  readonly type: 'webhook';
  /** Sent with every delivery, e.g. `authorization`. */
  readonly headers: Readonly<Record<string, string>>;
}

export type SinkConfig = AlertmanagerSinkConfig | PagerDutySinkConfig | SlackSinkConfig | WebhookSinkConfig;

export interface AlertsConfig {
  readonly sinks: readonly SinkConfig[];
  /** How often the delivery loop looks for due outbox entries. */
  readonly pollIntervalMillis: number;
  /** Outbox entries taken per delivery pass. */
  readonly batchSize: number;
  /** Requests in flight at once within a pass. */
  readonly concurrency: number;
  /**
   * How long a delivery pass waits for a sink's answer. A request still unanswered then is *late*:
   * the pass moves on, but the request stays open (the sink may be acting on it), and its page is
   * not sent again while it is.
   */
  readonly requestTimeoutMillis: number;
  /**
   * A late request still unanswered this long after it was sent is aborted; its page is then sent
   * again, with the same `idempotency-key`. At least `requestTimeoutMillis`.
   */
  readonly lateRequestTimeoutMillis: number;
  /**
   * Retry n waits a random time in [0, min(cap, retryBaseMillis × 2^n)] ("full jitter"); a sink's
   * `Retry-After` is honoured up to the same cap. The cap is `criticalRetryCapMillis` for critical
   * incidents, so a critical page reaches a sink that answers again within that (plus one poll)
   * however long it was down, and `retryCapMillis` for the others.
   */
  readonly retryBaseMillis: number;
  readonly retryCapMillis: number;
  /** At most `retryCapMillis`. */
  readonly criticalRetryCapMillis: number;
}

export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue';

const DEFAULT_MIN_SEVERITY: Severity = 'high';
/** Prometheus re-sends firing alerts every minute by default; keyscope does the same. */
const DEFAULT_RESEND_INTERVAL_MILLIS = 60_000;

export function defaultAlertsConfig(): AlertsConfig {
  return Object.freeze({
    sinks: Object.freeze([]),
    pollIntervalMillis: 1_000,
    batchSize: 100,
    concurrency: 4,
    requestTimeoutMillis: 10_000,
    lateRequestTimeoutMillis: 60_000,
    retryBaseMillis: 1_000,
    retryCapMillis: 5 * 60_000,
    criticalRetryCapMillis: 15_000,
  });
}

const TOP_LEVEL_KEYS = [
  'sinks',
  'pollIntervalMillis',
  'batchSize',
  'concurrency',
  'requestTimeoutMillis',
  'lateRequestTimeoutMillis',
  'retryBaseMillis',
  'retryCapMillis',
  'criticalRetryCapMillis',
] as const;

const SINK_KEYS: Readonly<Record<SinkType, readonly string[]>> = {
  alertmanager: ['type', 'name', 'url', 'minSeverity', 'resendIntervalMillis'],
  pagerduty: ['type', 'name', 'url', 'routingKey', 'minSeverity'],
  slack: ['type', 'name', 'url', 'minSeverity'],
  webhook: ['type', 'name', 'url', 'headers', 'minSeverity'],
};

const SINK_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
/** RFC 9110 `token`: what a header field name may contain. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Framing headers fetch computes itself; letting config set them would corrupt the request. */
const RESERVED_HEADERS = new Set(['content-length', 'host', 'transfer-encoding', 'connection']);

/**
 * Validates the `alerts` section of a config file (any subset of the keys; the rest keep their
 * defaults) and returns it frozen. `path` is where the section sits in the file, so messages name
 * the field as the user wrote it: `alerts.sinks[1].url must be an http(s) URL, received "ftp://x"`.
 * `undefined` yields the defaults (no sinks).
 */
export function parseAlertsConfig(value: unknown, path = 'alerts'): AlertsConfig {
  const defaults = defaultAlertsConfig();
  if (value === undefined) return defaults;
  const section = mapping(value, path);
  checkKeys(section, TOP_LEVEL_KEYS, path);
  type IntegerKey = Exclude<(typeof TOP_LEVEL_KEYS)[number], 'sinks'>;
  const integer = (key: IntegerKey, fallback: number = defaults[key]): number =>
    section[key] === undefined ? fallback : positiveInteger(section[key], `${path}.${key}`);
  const requestTimeoutMillis = integer('requestTimeoutMillis');
  const retryCapMillis = integer('retryCapMillis');
  const config: AlertsConfig = {
    sinks: parseSinks(section.sinks, `${path}.sinks`),
    pollIntervalMillis: integer('pollIntervalMillis'),
    batchSize: integer('batchSize'),
    concurrency: integer('concurrency'),
    requestTimeoutMillis,
    // The defaults of these two follow the field they are bounded by when that one is set past them,
    // so raising the request timeout or lowering the cap alone stays a valid configuration.
    lateRequestTimeoutMillis: integer(
      'lateRequestTimeoutMillis',
      Math.max(defaults.lateRequestTimeoutMillis, requestTimeoutMillis),
    ),
    retryBaseMillis: integer('retryBaseMillis'),
    retryCapMillis,
    criticalRetryCapMillis: integer(
      'criticalRetryCapMillis',
      Math.min(defaults.criticalRetryCapMillis, retryCapMillis),
    ),
  };
  bounded(config, 'retryCapMillis', 'at least', 'retryBaseMillis', path);
  bounded(config, 'criticalRetryCapMillis', 'at most', 'retryCapMillis', path);
  bounded(config, 'lateRequestTimeoutMillis', 'at least', 'requestTimeoutMillis', path);
  return deepFreeze(config);
}

/** Refuses a config whose `field` is not `relation` its `bound` field. */
function bounded(
  config: AlertsConfig,
  field: 'retryCapMillis' | 'criticalRetryCapMillis' | 'lateRequestTimeoutMillis',
  relation: 'at least' | 'at most',
  bound: 'retryBaseMillis' | 'retryCapMillis' | 'requestTimeoutMillis',
  path: string,
): void {
  const holds = relation === 'at least' ? config[field] >= config[bound] : config[field] <= config[bound];
  if (holds) return;
  throw fail(
    ALERTS_CONFIG_INVALID_VALUE,
    `${path}.${field} must be ${relation} ${path}.${bound} (${config[bound]}), received ${config[field]}`,
  );
}

function parseSinks(value: unknown, path: string): SinkConfig[] {
  if (value === undefined) return [];
  if (!Array.isArray(value))
    throw fail(ALERTS_CONFIG_WRONG_TYPE, `${path} must be a list, received ${describe(value)}`);
  const sinks = value.map((entry, index) => parseSink(entry, `${path}[${index}]`));
  const seen = new Map<string, number>();
  for (const [index, sink] of sinks.entries()) {
    const first = seen.get(sink.name);
    if (first !== undefined) {
      throw fail(
        ALERTS_CONFIG_DUPLICATE_NAME,
        `${path}[${index}].name "${sink.name}" is already the name of ${path}[${first}]; give each sink its own name`,
      );
    }
    seen.set(sink.name, index);
  }
  return sinks;
}

function parseSink(value: unknown, path: string): SinkConfig {
  const sink = mapping(value, path);
  if (sink.type === undefined) {
    throw fail(ALERTS_CONFIG_MISSING, `${path}.type is required: one of ${SINK_TYPES.join(', ')}`);
  }
  if (typeof sink.type !== 'string') {
    throw fail(ALERTS_CONFIG_WRONG_TYPE, `${path}.type must be a string, received ${describe(sink.type)}`);
  }
  if (!(SINK_TYPES as readonly string[]).includes(sink.type)) {
    throw fail(
      ALERTS_CONFIG_INVALID_VALUE,
      `${path}.type must be one of ${SINK_TYPES.join(', ')}, received ${describe(sink.type)}`,
    );
  }
  const type = sink.type as SinkType;
  checkKeys(sink, SINK_KEYS[type], path);
  const name = sink.name === undefined ? type : sinkName(sink.name, `${path}.name`);
  const minSeverity =
    sink.minSeverity === undefined ? DEFAULT_MIN_SEVERITY : severity(sink.minSeverity, `${path}.minSeverity`);
  switch (type) {
    case 'alertmanager':
      return {
        type,
        name,
        url: httpUrl(required(sink.url, `${path}.url`), `${path}.url`),
        minSeverity,
        resendIntervalMillis:
          sink.resendIntervalMillis === undefined
            ? DEFAULT_RESEND_INTERVAL_MILLIS
            : positiveInteger(sink.resendIntervalMillis, `${path}.resendIntervalMillis`),
      };
    case 'pagerduty':
      return {
        type,
        name,
        url: sink.url === undefined ? PAGERDUTY_EVENTS_URL : httpUrl(sink.url, `${path}.url`),
        routingKey: routingKey(required(sink.routingKey, `${path}.routingKey`), `${path}.routingKey`),
        minSeverity,
      };
    case 'slack':
      return { type, name, url: httpUrl(required(sink.url, `${path}.url`), `${path}.url`), minSeverity };
    case 'webhook':
      return {
        type,
        name,
        url: httpUrl(required(sink.url, `${path}.url`), `${path}.url`),
        headers: sink.headers === undefined ? {} : headers(sink.headers, `${path}.headers`),
        minSeverity,
      };
  }
}

function mapping(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw fail(ALERTS_CONFIG_WRONG_TYPE, `${path} must be a mapping, received ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

function checkKeys(value: Record<string, unknown>, known: readonly string[], path: string): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw fail(
        ALERTS_CONFIG_UNKNOWN_KEY,
        `${path} has an unknown key '${key}'; known keys: ${known.join(', ')}`,
      );
    }
  }
}

function required(value: unknown, path: string): unknown {
  if (value === undefined) throw fail(ALERTS_CONFIG_MISSING, `${path} is required`);
  return value;
}

function string(value: unknown, path: string): string {
  if (typeof value !== 'string') {
    throw fail(ALERTS_CONFIG_WRONG_TYPE, `${path} must be a string, received ${describe(value)}`);
  }
  return value;
}

function httpUrl(value: unknown, path: string): string {
  const text = string(value, path);
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw fail(ALERTS_CONFIG_INVALID_VALUE, `${path} must be an http(s) URL, received ${describe(value)}`);
  }
  return text;
}

function sinkName(value: unknown, path: string): string {
  const text = string(value, path);
  if (!SINK_NAME.test(text)) {
    throw fail(
      ALERTS_CONFIG_INVALID_VALUE,
      `${path} must be 1 to 64 letters, digits, '_', '-' or '.', received ${describe(value)}`,
    );
  }
  return text;
}

function severity(value: unknown, path: string): Severity {
  const text = string(value, path);
  if (!(SEVERITIES as readonly string[]).includes(text)) {
    throw fail(
      ALERTS_CONFIG_INVALID_VALUE,
      `${path} must be one of ${SEVERITIES.join(', ')}, received ${describe(value)}`,
    );
  }
  return text as Severity;
}

function routingKey(value: unknown, path: string): string {
  const text = string(value, path);
  // PagerDuty answers 400 to any other length, and only after an incident is already unpaged;
  // a REST API key pasted by mistake (20 characters) is caught here instead.
  if (!/^[A-Za-z0-9]{32}$/.test(text)) {
    throw fail(
      ALERTS_CONFIG_INVALID_VALUE,
      `${path} must be the 32-character Events API v2 integration key, received ${text.length} characters`,
    );
  }
  return text;
}

function headers(value: unknown, path: string): Record<string, string> {
  const entries = mapping(value, path);
  const out: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(entries)) {
    const field = `${path}.${name}`;
    if (!HEADER_NAME.test(name) || RESERVED_HEADERS.has(name.toLowerCase())) {
      throw fail(
        ALERTS_CONFIG_INVALID_VALUE,
        `${field} is not a header a webhook may set (a token without spaces, not ${[...RESERVED_HEADERS].join('/')})`,
      );
    }
    const text = string(headerValue, field);
    // fetch refuses values outside Latin-1 and line breaks would split the header: fail at startup.
    if (/[^\t\x20-\x7e\x80-\xff]/.test(text)) {
      throw fail(ALERTS_CONFIG_INVALID_VALUE, `${field} must be printable Latin-1 text without line breaks`);
    }
    out[name.toLowerCase()] = text;
  }
  return out;
}

function positiveInteger(value: unknown, path: string): number {
  if (typeof value !== 'number') {
    throw fail(ALERTS_CONFIG_WRONG_TYPE, `${path} must be a number, received ${describe(value)}`);
  }
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw fail(ALERTS_CONFIG_INVALID_VALUE, `${path} must be a positive integer, received ${value}`);
  }
  return value;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'a mapping' : String(value);
}

function fail(definition: ErrorDefinition, message: string): KeyscopeError {
  return new KeyscopeError(definition, message);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
