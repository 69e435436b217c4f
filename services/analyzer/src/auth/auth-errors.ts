import { defineError } from '@keyscope/errors';

/**
 * What authentication refuses, for the API, the web page and the Kafka roles' HTTP alike. Listed in
 * docs/errors.md under "analyzer", with the rest of the API's codes (`API_ERRORS`).
 */
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
  "The token's role does not allow this (ack/resolve need `admin`; a `metrics` token reads /metrics only), a tenant's token asked for /metrics (it names every tenant's services), a tenant-scoped admin token tried to act on an incident that also holds other tenants' keys, or the API has no tokens and the request did not come from loopback.",
);
export const API_AUTH_THROTTLED = defineError(
  'KS_API_AUTH_THROTTLED',
  429,
  true,
  'The client address (an IPv6 client: its /64) presented more unknown bearer tokens than `api.authFailureBudget` allows (20 at once, then one a second by default): its request was refused without its token counting as a guess. `Retry-After` says when it may try again; a token that already authenticated from that address is still accepted.',
);
