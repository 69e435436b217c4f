import {
  type ConfigOf,
  configSchema,
  custom,
  type FieldPath,
  integer,
  isPlainObject,
  object,
  oneOf,
  text,
} from '@keyscope/errors';
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

export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue';

const SINK_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
/** RFC 9110 `token`: what a header field name may contain. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Framing headers fetch computes itself; letting config set them would corrupt the request. */
const RESERVED_HEADERS = new Set(['content-length', 'host', 'transfer-encoding', 'connection']);
const HTTP_URL = 'an http(s) URL';

/** What every sink has; the sink's `type` picks its fields (`SINKS`) before they are checked. */
function sinkFields<const T extends SinkType>(type: T) {
  return {
    type: oneOf([type], { default: type }),
    /** Identifies the sink's deliveries in the outbox and its counters; defaults to the type. */
    name: text({ default: type, accepts: SINK_NAME, expected: "1 to 64 letters, digits, '_', '-' or '.'" }),
    url: text({ required: true, accepts: isHttpUrl, expected: HTTP_URL }),
    /** Incidents below this severity do not reach the sink (default `high`: warnings do not page). */
    minSeverity: oneOf(SEVERITIES, { default: 'high' }),
  };
}

const SINKS = {
  alertmanager: object({
    ...sinkFields('alertmanager'),
    /**
     * Alertmanager forgets an alert that is not re-sent (it sets `endsAt` to the time it last heard
     * of it plus a few intervals), so open incidents are re-posted this often. Prometheus re-sends
     * firing alerts every minute by default; keyscope does the same.
     */
    resendIntervalMillis: integer({ default: 60_000 }),
  }),
  pagerduty: object({
    ...sinkFields('pagerduty'),
    url: text({ default: PAGERDUTY_EVENTS_URL, accepts: isHttpUrl, expected: HTTP_URL }),
    /**
     * The 32-character integration key of an Events API v2 integration. PagerDuty answers 400 to
     * any other length, and only after an incident is already unpaged; a REST API key pasted by
     * mistake (20 characters) is caught here instead.
     */
    routingKey: text({
      required: true,
      secret: true,
      accepts: /^[A-Za-z0-9]{32}$/,
      expected: 'the 32-character Events API v2 integration key',
    }),
  }),
  slack: object(sinkFields('slack')),
  webhook: object({
    ...sinkFields('webhook'),
    /** Sent with every delivery, e.g. `authorization`. */
    headers: custom(checkHeaders, { default: {} }),
  }),
};

export type AlertmanagerSinkConfig = ConfigOf<typeof SINKS.alertmanager.fields>;
export type PagerDutySinkConfig = ConfigOf<typeof SINKS.pagerduty.fields>;
export type SlackSinkConfig = ConfigOf<typeof SINKS.slack.fields>;
export type WebhookSinkConfig = ConfigOf<typeof SINKS.webhook.fields>;
export type SinkConfig = AlertmanagerSinkConfig | PagerDutySinkConfig | SlackSinkConfig | WebhookSinkConfig;

const ALERTS = configSchema(
  {
    sinks: custom(checkSinks, { default: [] }),
    /** How often the delivery loop looks for due outbox entries. */
    pollIntervalMillis: integer({ default: 1_000 }),
    /** Outbox entries taken per delivery pass. */
    batchSize: integer({ default: 100 }),
    /** Requests in flight at once within a pass. */
    concurrency: integer({ default: 4 }),
    /**
     * How long a delivery pass waits for a sink's answer. A request still unanswered then is *late*:
     * the pass moves on, but the request stays open (the sink may be acting on it), and its page is
     * not sent again while it is.
     */
    requestTimeoutMillis: integer({ default: 10_000 }),
    /**
     * A late request still unanswered this long after it was sent is aborted; its page is then sent
     * again, with the same `idempotency-key`. At least `requestTimeoutMillis`.
     */
    lateRequestTimeoutMillis: integer({ default: 60_000 }),
    /**
     * Retry n waits a random time in [0, min(cap, retryBaseMillis × 2^n)] ("full jitter"); a sink's
     * `Retry-After` is honoured up to the same cap. The cap is `criticalRetryCapMillis` for critical
     * incidents, so a critical page reaches a sink that answers again within that (plus one poll)
     * however long it was down, and `retryCapMillis` for the others.
     */
    retryBaseMillis: integer({ default: 1_000 }),
    retryCapMillis: integer({ default: 5 * 60_000 }),
    /** At most `retryCapMillis`. */
    criticalRetryCapMillis: integer({ default: 15_000 }),
  },
  {
    errors: {
      wrongType: ALERTS_CONFIG_WRONG_TYPE,
      invalidValue: ALERTS_CONFIG_INVALID_VALUE,
      unknownKey: ALERTS_CONFIG_UNKNOWN_KEY,
      missing: ALERTS_CONFIG_MISSING,
    },
  },
);

export type AlertsConfig = ConfigOf<typeof ALERTS.fields>;

export function defaultAlertsConfig(): AlertsConfig {
  return ALERTS.defaults;
}

/**
 * Validates the `alerts` section of a config file (any subset of the keys; the rest keep their
 * defaults) and returns it frozen. `path` is where the section sits in the file, so messages name
 * the field as the user wrote it: `alerts.sinks[1].url must be an http(s) URL, received "ftp://x"`.
 * `undefined` yields the defaults (no sinks).
 */
export function parseAlertsConfig(value: unknown, path = 'alerts'): AlertsConfig {
  if (value === undefined) return ALERTS.defaults;
  const parsed = ALERTS.parse(value, { path });
  // A mapping: parse refuses anything else.
  const given = value as Record<string, unknown>;
  const config: AlertsConfig = {
    ...parsed,
    // The defaults of these two follow the field they are bounded by when that one is set past them,
    // so raising the request timeout or lowering the cap alone stays a valid configuration.
    lateRequestTimeoutMillis:
      given.lateRequestTimeoutMillis === undefined
        ? Math.max(parsed.lateRequestTimeoutMillis, parsed.requestTimeoutMillis)
        : parsed.lateRequestTimeoutMillis,
    criticalRetryCapMillis:
      given.criticalRetryCapMillis === undefined
        ? Math.min(parsed.criticalRetryCapMillis, parsed.retryCapMillis)
        : parsed.criticalRetryCapMillis,
  };
  bounded(config, 'retryCapMillis', 'at least', 'retryBaseMillis', path);
  bounded(config, 'criticalRetryCapMillis', 'at most', 'retryCapMillis', path);
  bounded(config, 'lateRequestTimeoutMillis', 'at least', 'requestTimeoutMillis', path);
  return Object.freeze(config);
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
  throw ALERTS.at(path)
    .child(field)
    .invalid(`${relation} ${path}.${bound} (${config[bound]})`, config[field]);
}

function checkSinks(value: unknown, at: FieldPath): readonly SinkConfig[] {
  if (!Array.isArray(value)) throw at.wrongType('a list', value);
  const sinks = value.map((entry, index) => checkSink(entry, at.item(index)));
  const seen = new Map<string, number>();
  for (const [index, sink] of sinks.entries()) {
    const first = seen.get(sink.name);
    if (first !== undefined) {
      throw at.refuse(
        ALERTS_CONFIG_DUPLICATE_NAME,
        `${at.item(index).name}.name "${sink.name}" is already the name of ${at.item(first).name}; give each sink its own name`,
      );
    }
    seen.set(sink.name, index);
  }
  return sinks;
}

const SINK_TYPE = oneOf(SINK_TYPES, { required: true });

function checkSink(value: unknown, at: FieldPath): SinkConfig {
  if (!isPlainObject(value)) throw at.wrongType(at.objectNoun, value);
  if (value.type === undefined) throw at.child('type').missing(`: one of ${SINK_TYPES.join(', ')}`);
  const type = SINK_TYPE.check(value.type, at.child('type'), undefined);
  return SINKS[type].check(value, at, undefined);
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

const HEADER_VALUE = text({
  required: true,
  // fetch refuses values outside Latin-1 and line breaks would split the header: fail at startup.
  accepts: (value) => !/[^\t\x20-\x7e\x80-\xff]/.test(value),
  expected: 'printable Latin-1 text without line breaks',
  // Headers carry credentials (`authorization`).
  secret: true,
});

function checkHeaders(value: unknown, at: FieldPath): Readonly<Record<string, string>> {
  if (!isPlainObject(value)) throw at.wrongType(at.objectNoun, value);
  const headers: Record<string, string> = {};
  for (const [name, headerValue] of Object.entries(value)) {
    const field = at.child(name);
    if (!HEADER_NAME.test(name) || RESERVED_HEADERS.has(name.toLowerCase())) {
      throw field.refuse(
        ALERTS_CONFIG_INVALID_VALUE,
        `${field.name} is not a header a webhook may set (a token without spaces, not ${[...RESERVED_HEADERS].join('/')})`,
      );
    }
    headers[name.toLowerCase()] = HEADER_VALUE.check(headerValue, field, undefined);
  }
  return headers;
}
