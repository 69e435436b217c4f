import { defineError } from '@keyscope/errors';

/**
 * The alerts package's codes: raised only while validating the `alerts` configuration section, so
 * a bad sink stops startup naming the field. Delivery failures are never thrown: they are recorded
 * on the outbox entry (retried or abandoned) and counted by sink and outcome.
 */

export const ALERTS_CONFIG_UNKNOWN_KEY = defineError(
  'KS_ALERTS_CONFIG_UNKNOWN_KEY',
  400,
  false,
  'The `alerts` section or one of its sinks has a key it does not know for its type; the message lists the known ones.',
);

export const ALERTS_CONFIG_WRONG_TYPE = defineError(
  'KS_ALERTS_CONFIG_WRONG_TYPE',
  400,
  false,
  'A value of the wrong type: `alerts` or a sink is not a mapping, `sinks` is not a list, `headers` is not a mapping of strings, a number or string field holds something else.',
);

export const ALERTS_CONFIG_MISSING = defineError(
  'KS_ALERTS_CONFIG_MISSING',
  400,
  false,
  'A required sink field is absent: `type` on every sink, `url` on alertmanager, slack and webhook sinks, `routingKey` on pagerduty sinks.',
);

export const ALERTS_CONFIG_INVALID_VALUE = defineError(
  'KS_ALERTS_CONFIG_INVALID_VALUE',
  400,
  false,
  'Right type, wrong value: a sink `type` other than alertmanager/pagerduty/slack/webhook, a `url` that is not an http(s) URL, a `minSeverity` other than critical/high/warning, a routing key that is not 32 characters, a header name or value HTTP cannot carry, a sink name with characters other than letters, digits, `_`, `-`, `.`, a duration or count that is not a positive integer, `retryCapMillis` below `retryBaseMillis`, `criticalRetryCapMillis` above `retryCapMillis`, `lateRequestTimeoutMillis` below `requestTimeoutMillis`.',
);

export const ALERTS_CONFIG_DUPLICATE_NAME = defineError(
  'KS_ALERTS_CONFIG_DUPLICATE_NAME',
  400,
  false,
  'Two sinks have the same `name` (a sink’s name defaults to its type, so two sinks of one type need names): the name identifies its deliveries in the outbox and its counters.',
);

/** Every code this package declares, for the registry test. */
export const ALERTS_ERRORS = [
  ALERTS_CONFIG_UNKNOWN_KEY,
  ALERTS_CONFIG_WRONG_TYPE,
  ALERTS_CONFIG_MISSING,
  ALERTS_CONFIG_INVALID_VALUE,
  ALERTS_CONFIG_DUPLICATE_NAME,
] as const;
