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
export const CURSOR_INVALID = defineError(
  'KS_CURSOR_INVALID',
  400,
  false,
  'A list cursor was not one this API handed out.',
);
