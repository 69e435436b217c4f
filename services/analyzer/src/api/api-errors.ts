import { defineError } from '@keyscope/errors';

/** What the HTTP API refuses. Listed in docs/errors.md under "analyzer". */
export const API_BAD_PARAMETER = defineError(
  'KS_API_BAD_PARAMETER',
  400,
  false,
  'A query or path parameter of the HTTP API is missing, of the wrong type, or out of range; the message names it.',
);
export const API_UNAUTHENTICATED = defineError(
  'KS_API_UNAUTHENTICATED',
  401,
  false,
  'The API requires a bearer token (tokens are configured) and the request had none or an unknown one.',
);
export const API_FORBIDDEN = defineError(
  'KS_API_FORBIDDEN',
  403,
  false,
  "The token's role does not allow this (ack/resolve need `admin`), or the API has no tokens and the request did not come from loopback.",
);
export const API_NOT_FOUND = defineError(
  'KS_API_NOT_FOUND',
  404,
  false,
  'No incident, finding or route with that id (or not visible to a tenant-scoped token).',
);

export const API_ERRORS = [API_BAD_PARAMETER, API_UNAUTHENTICATED, API_FORBIDDEN, API_NOT_FOUND] as const;
