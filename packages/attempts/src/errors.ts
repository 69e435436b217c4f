import { defineError } from '@keyscope/errors';

/**
 * The attempts stage's error codes. Extraction itself never throws on span content (bad values
 * are counted in `ExtractedAttempts.invalid`, spans refused under limits by the SPAN_* codes
 * below); only a bad attribute mapping file throws, at startup.
 * Messages name the path in the file (`fields.ky`) and say what was expected.
 */
export const MAPPING_SYNTAX = defineError(
  'KS_MAPPING_SYNTAX',
  400,
  false,
  'The attribute mapping file is not valid YAML or JSON.',
);

export const MAPPING_UNKNOWN_KEY = defineError(
  'KS_MAPPING_UNKNOWN_KEY',
  400,
  false,
  'The attribute mapping has a key the schema does not know (a top-level option or a field name); the message lists the known ones.',
);

export const MAPPING_WRONG_TYPE = defineError(
  'KS_MAPPING_WRONG_TYPE',
  400,
  false,
  'A value in the attribute mapping has the wrong type (for example a string where a list of attribute names is expected).',
);

export const MAPPING_EMPTY_LIST = defineError(
  'KS_MAPPING_EMPTY_LIST',
  400,
  false,
  'A field in the attribute mapping was given an empty list of attribute names; omit the field to keep its defaults.',
);

export const MAPPING_EMPTY_NAME = defineError(
  'KS_MAPPING_EMPTY_NAME',
  400,
  false,
  'An attribute name in the attribute mapping is empty or only whitespace.',
);

export const MAPPING_INVALID_VALUE = defineError(
  'KS_MAPPING_INVALID_VALUE',
  400,
  false,
  'A value in the attribute mapping has the right type but is not allowed: an unknown keyNamespace, a non-positive or fractional activityBucketMillis, or an attribute name listed twice for one field.',
);

/*
 * Why extraction refuses a span under limits (span-limits.ts). Never thrown: each refused span is
 * counted under its code and reported to the sender in OTLP partial_success, which senders treat
 * as permanent (the same span is refused again).
 */

export const SPAN_TOO_OLD = defineError(
  'KS_SPAN_TOO_OLD',
  400,
  false,
  'A span starts before the time window: before 2000-01-01, or (in serve) more than the retry horizon plus spans.maxLateMillis before the service clock. A start of 0 (unset) is refused so.',
);

export const SPAN_IN_FUTURE = defineError(
  'KS_SPAN_IN_FUTURE',
  400,
  false,
  'A span starts or ends more than spans.maxFutureMillis after the clock (serve: the service clock; analyze: the machine clock, since an archive cannot hold spans from the future).',
);

export const SPAN_ENDS_BEFORE_START = defineError(
  'KS_SPAN_ENDS_BEFORE_START',
  400,
  false,
  'A span ends before it starts (a missing end time reads as 0).',
);

export const SPAN_KEY_TOO_LONG = defineError(
  'KS_SPAN_KEY_TOO_LONG',
  400,
  false,
  'A span carries an idempotency key longer than spans.maxKeyBytes bytes of UTF-8; it is neither judged nor stored.',
);

export const SPAN_NAME_TOO_LONG = defineError(
  'KS_SPAN_NAME_TOO_LONG',
  400,
  false,
  "A name keyscope stores to say where a key ran is longer than spans.maxNameBytes bytes of UTF-8: the resource's service, node, cluster, region or zone, or the attempt's tenant or store.",
);

/** Every code this package declares, for the documentation test. */
export const ATTEMPTS_ERRORS = [
  MAPPING_SYNTAX,
  MAPPING_UNKNOWN_KEY,
  MAPPING_WRONG_TYPE,
  MAPPING_EMPTY_LIST,
  MAPPING_EMPTY_NAME,
  MAPPING_INVALID_VALUE,
  SPAN_TOO_OLD,
  SPAN_IN_FUTURE,
  SPAN_ENDS_BEFORE_START,
  SPAN_KEY_TOO_LONG,
  SPAN_NAME_TOO_LONG,
] as const;
