import { defineError } from '@keyscope/errors';

export const STORE_UNAVAILABLE = defineError(
  'KS_STORE_UNAVAILABLE',
  503,
  true,
  'The SQLite database could not be written (disk full, locked, I/O error); the sender should retry.',
);
export const STORE_NEWER_SCHEMA = defineError(
  'KS_STORE_NEWER_SCHEMA',
  500,
  false,
  'The database was written by a newer keyscope (its schema version is higher than this build knows).',
);
export const STORE_PRE_RELEASE_SCHEMA = defineError(
  'KS_STORE_PRE_RELEASE_SCHEMA',
  500,
  false,
  'The database was written by a pre-release build of keyscope (it has a schema version but not the application id keyscope sets), whose schema this build does not read.',
);
export const STORE_CORRUPT = defineError(
  'KS_STORE_CORRUPT',
  500,
  false,
  'The database file is damaged (its integrity check failed) or is not a SQLite database; the store refuses to open it.',
);
export const CURSOR_INVALID = defineError(
  'KS_CURSOR_INVALID',
  400,
  false,
  'A list cursor was not one this API handed out.',
);

export const STORE_ERRORS = [
  STORE_UNAVAILABLE,
  STORE_NEWER_SCHEMA,
  STORE_PRE_RELEASE_SCHEMA,
  STORE_CORRUPT,
  CURSOR_INVALID,
] as const;
