import { defineError } from '@keyscope/errors';

/**
 * The attempts stage's error codes. Extraction itself never throws on span content (bad values
 * are counted in `ExtractedAttempts.invalid`); only a bad attribute mapping file does, at startup.
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

/** Every code this package declares, for the documentation test. */
export const ATTEMPTS_ERRORS = [
  MAPPING_SYNTAX,
  MAPPING_UNKNOWN_KEY,
  MAPPING_WRONG_TYPE,
  MAPPING_EMPTY_LIST,
  MAPPING_EMPTY_NAME,
  MAPPING_INVALID_VALUE,
] as const;
