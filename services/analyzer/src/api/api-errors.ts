import { defineError } from '@keyscope/errors';
import { API_AUTH_THROTTLED, API_FORBIDDEN, API_UNAUTHENTICATED } from '../auth/auth-errors.ts';

// Refusals of a token or of a client address: declared with the authentication the web page shares.
export { API_AUTH_THROTTLED, API_FORBIDDEN, API_UNAUTHENTICATED };

/** What the HTTP API refuses. Listed in docs/errors.md under "analyzer". */
export const API_BAD_PARAMETER = defineError(
  'KS_API_BAD_PARAMETER',
  400,
  false,
  'A query or path parameter of the HTTP API is missing, of the wrong type, or out of range; the message names it.',
);
export const API_BAD_REQUEST = defineError(
  'KS_API_BAD_REQUEST',
  400,
  false,
  'The request itself cannot be read: a URL that is not valid percent-encoding, a body that is not the JSON its content type says, a Content-Length that does not match, or a malformed HTTP request.',
);
export const API_FOREIGN_HOST = defineError(
  'KS_API_FOREIGN_HOST',
  403,
  false,
  "No tokens are configured and the request's Host header names neither a loopback name nor `api.host` nor `api.publicUrl`'s host (a page that rebinds its own DNS name to 127.0.0.1).",
);
export const API_CROSS_SITE = defineError(
  'KS_API_CROSS_SITE',
  403,
  false,
  "No tokens are configured and the request came from another web origin (its Origin header is neither the API's own nor `api.publicUrl`'s), or it changes something without `content-type: application/json` or an `x-keyscope-client` header — what a page on another site can make a browser send.",
);
export const API_NOT_FOUND = defineError(
  'KS_API_NOT_FOUND',
  404,
  false,
  'No incident, finding or route with that id (or not visible to a tenant-scoped token).',
);
export const API_METHOD_NOT_ALLOWED = defineError(
  'KS_API_METHOD_NOT_ALLOWED',
  405,
  false,
  'The path exists but not with this method; the `Allow` header lists the methods it has.',
);
export const API_REQUEST_TIMEOUT = defineError(
  'KS_API_REQUEST_TIMEOUT',
  408,
  true,
  'The request was not received completely in time (Node.js `requestTimeout`).',
);
export const API_BODY_TOO_LARGE = defineError(
  'KS_API_BODY_TOO_LARGE',
  413,
  false,
  'The request body is larger than the API reads (64 KiB; no API route takes a body).',
);
export const API_URI_TOO_LONG = defineError(
  'KS_API_URI_TOO_LONG',
  414,
  false,
  'A path segment (a key or an incident id) is longer than 4096 characters once decoded.',
);
export const API_UNSUPPORTED_MEDIA_TYPE = defineError(
  'KS_API_UNSUPPORTED_MEDIA_TYPE',
  415,
  false,
  'The request has a body of a content type the API does not read (it reads JSON and plain text).',
);
export const API_HEADERS_TOO_LARGE = defineError(
  'KS_API_HEADERS_TOO_LARGE',
  431,
  false,
  'The request line and headers are larger than Node.js accepts (`--max-http-header-size`, 16 KiB by default).',
);
export const API_INTERNAL = defineError(
  'KS_API_INTERNAL',
  500,
  false,
  'The API failed to answer because of a fault in keyscope; the error is logged, the message says only `internal error`.',
);

export const API_ERRORS = [
  API_BAD_PARAMETER,
  API_BAD_REQUEST,
  API_UNAUTHENTICATED,
  API_FORBIDDEN,
  API_FOREIGN_HOST,
  API_CROSS_SITE,
  API_AUTH_THROTTLED,
  API_NOT_FOUND,
  API_METHOD_NOT_ALLOWED,
  API_REQUEST_TIMEOUT,
  API_BODY_TOO_LARGE,
  API_URI_TOO_LONG,
  API_UNSUPPORTED_MEDIA_TYPE,
  API_HEADERS_TOO_LARGE,
  API_INTERNAL,
] as const;
