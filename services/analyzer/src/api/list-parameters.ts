import { KeyscopeError } from '@keyscope/errors';
import { API_BAD_PARAMETER } from './api-errors.ts';
import type { JsonSchema } from './api-schemas.ts';
import { ECHO_MAX_CHARS, excerpt } from './error-handler.ts';

/** The query parameters every paged list of the API shares, and how they read. */

export const DEFAULT_LIMIT = 50;

export const LIMIT = {
  type: 'integer',
  minimum: 1,
  maximum: 500,
  description: `Items per page, ${DEFAULT_LIMIT} when absent.`,
} as const satisfies JsonSchema;

// Cursors the API issues are a few dozen characters; a longer one is refused before it is read.
export const CURSOR = {
  type: 'string',
  maxLength: ECHO_MAX_CHARS,
  description: "Where the page starts: the previous page's `nextCursor`.",
} as const satisfies JsonSchema;

export const SINCE = {
  type: 'string',
  format: 'date-time',
  description: 'Only what was seen at or after this RFC 3339 time.',
} as const satisfies JsonSchema;

export const UNTIL = {
  type: 'string',
  format: 'date-time',
  description: 'Only what was seen before this RFC 3339 time.',
} as const satisfies JsonSchema;

/** The query of a paged list, as `LIMIT`, `CURSOR`, `SINCE` and `UNTIL` validate it. */
export interface ListQuery {
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
}

/** An RFC 3339 query value in Unix milliseconds; refuses anything else (KS_API_BAD_PARAMETER). */
export function millis(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Date.parse(value);
  if (Number.isNaN(parsed)) {
    throw new KeyscopeError(API_BAD_PARAMETER, `expected an RFC 3339 time, received ${excerpt(value)}`);
  }
  return parsed;
}
