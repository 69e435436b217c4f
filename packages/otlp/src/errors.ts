import { defineError } from '@keyscope/errors';

/**
 * Every way an OTLP payload can be refused. All are permanent (400): the same bytes fail the same
 * way, so the sender must drop them rather than retry. Protobuf messages carry the byte offset.
 */

export const OTLP_TRUNCATED = defineError(
  'KS_OTLP_TRUNCATED',
  400,
  false,
  'The protobuf payload ends inside a field: a truncated varint or fixed-width value, or a length that runs past the end of its enclosing message.',
);

export const OTLP_VARINT_TOO_LONG = defineError(
  'KS_OTLP_VARINT_TOO_LONG',
  400,
  false,
  'A protobuf varint is longer than 10 bytes.',
);

export const OTLP_WIRE_TYPE = defineError(
  'KS_OTLP_WIRE_TYPE',
  400,
  false,
  'A known protobuf field arrived with the wrong wire type, or a field uses an invalid wire type (6, 7) or the deprecated groups (3, 4).',
);

export const OTLP_FIELD_NUMBER = defineError(
  'KS_OTLP_FIELD_NUMBER',
  400,
  false,
  'A protobuf tag carries field number 0, which no message may use.',
);

export const OTLP_ID_LENGTH = defineError(
  'KS_OTLP_ID_LENGTH',
  400,
  false,
  "A trace id is not 16 bytes (32 hex characters in JSON), or a span id or parent span id is not 8 bytes (16 hex characters); a missing trace or span id counts as 0 bytes. A log record's ids are optional (absent, empty or all zeros: outside a trace); another length is refused.",
);

export const OTLP_ID_ZERO = defineError(
  'KS_OTLP_ID_ZERO',
  400,
  false,
  'A trace id or span id is all zeros, which the OTLP specification declares invalid.',
);

export const OTLP_UTF8 = defineError(
  'KS_OTLP_UTF8',
  400,
  false,
  'A string field (or a JSON payload) is not valid UTF-8.',
);

export const OTLP_NESTING = defineError(
  'KS_OTLP_NESTING',
  400,
  false,
  'Array or key-value-list attribute values are nested deeper than the decoder allows (maxDepth).',
);

export const OTLP_JSON = defineError(
  'KS_OTLP_JSON',
  400,
  false,
  'The OTLP/JSON payload is not valid JSON, or a field has the wrong JSON type or an unparseable value (hex id, int64 string, base64, enum name).',
);

export const OTLP_TIME_RANGE = defineError(
  'KS_OTLP_TIME_RANGE',
  400,
  false,
  'An OTLP/JSON time (startTimeUnixNano, endTimeUnixNano, timeUnixNano, observedTimeUnixNano) is an integer outside the unsigned 64-bit nanoseconds OTLP carries: a decimal string above 18446744073709551615, or a JSON number below 0 or at least 2^64 (such as 1e300).',
);

/** Every code this package declares, for the registry test and for receivers that list them. */
export const OTLP_ERRORS = [
  OTLP_TRUNCATED,
  OTLP_VARINT_TOO_LONG,
  OTLP_WIRE_TYPE,
  OTLP_FIELD_NUMBER,
  OTLP_ID_LENGTH,
  OTLP_ID_ZERO,
  OTLP_UTF8,
  OTLP_NESTING,
  OTLP_JSON,
  OTLP_TIME_RANGE,
] as const;
