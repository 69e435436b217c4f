import { defineError } from '@keyscope/errors';

/**
 * The analyzer's own error codes: what its receivers refuse before a payload reaches the decoder,
 * what they answer when the pipeline behind them is saturated, and what stops `keyscope serve`
 * from starting. Decode errors are the otlp package's (`KS_OTLP_*`).
 */

export const ANALYZER_BODY_TOO_LARGE = defineError(
  'KS_ANALYZER_BODY_TOO_LARGE',
  413,
  false,
  'An OTLP/HTTP request body is larger than `otlp.http.bodyLimitBytes`, before or after decompression.',
);

export const ANALYZER_UNSUPPORTED_MEDIA_TYPE = defineError(
  'KS_ANALYZER_UNSUPPORTED_MEDIA_TYPE',
  415,
  false,
  'An OTLP/HTTP request has a Content-Type other than application/x-protobuf or application/json (charset utf-8).',
);

export const ANALYZER_UNSUPPORTED_CONTENT_ENCODING = defineError(
  'KS_ANALYZER_UNSUPPORTED_CONTENT_ENCODING',
  415,
  false,
  'An OTLP/HTTP request has a Content-Encoding other than gzip or identity.',
);

export const ANALYZER_BAD_COMPRESSION = defineError(
  'KS_ANALYZER_BAD_COMPRESSION',
  400,
  false,
  'An OTLP/HTTP request body or an OTLP/gRPC message declared as compressed cannot be inflated (corrupt or truncated).',
);

export const ANALYZER_HEADERS_TIMEOUT = defineError(
  'KS_ANALYZER_HEADERS_TIMEOUT',
  408,
  false,
  "An OTLP/HTTP request's headers did not all arrive within `otlp.http.headersTimeoutMillis` of its first byte; the connection is closed.",
);

export const ANALYZER_BODY_TIMEOUT = defineError(
  'KS_ANALYZER_BODY_TIMEOUT',
  408,
  false,
  'An OTLP/HTTP request body did not all arrive within `otlp.http.bodyTimeoutMillis` of its headers; the connection is closed.',
);

export const ANALYZER_SATURATED = defineError(
  'KS_ANALYZER_SATURATED',
  503,
  true,
  'The receivers already hold `otlp.admission.maxInFlightRequests` requests or `maxInFlightSpans` spans that the pipeline has not acknowledged, or OTLP/HTTP bodies (OTLP/gRPC messages) still arriving already hold `otlp.http.maxBufferedBodyBytes` (`otlp.grpc.maxBufferedMessageBytes`); the sender should retry after the Retry-After interval.',
);

export const ANALYZER_SHUTTING_DOWN = defineError(
  'KS_ANALYZER_SHUTTING_DOWN',
  503,
  true,
  'The receiver is stopping: it answers the requests already in flight and refuses new ones, which the sender should retry.',
);

export const ANALYZER_MESSAGE_TOO_LARGE = defineError(
  'KS_ANALYZER_MESSAGE_TOO_LARGE',
  413,
  false,
  'An OTLP/gRPC message is larger than `otlp.grpc.maxReceiveMessageBytes`, as its length prefix declares it or after decompression; answered RESOURCE_EXHAUSTED.',
);

export const ANALYZER_MESSAGE_TIMEOUT = defineError(
  'KS_ANALYZER_MESSAGE_TIMEOUT',
  408,
  false,
  "An OTLP/gRPC call's message did not all arrive within `otlp.grpc.messageTimeoutMillis` of the call's headers (or within the call's own grpc-timeout, when shorter); answered DEADLINE_EXCEEDED.",
);

export const ANALYZER_MALFORMED_MESSAGE = defineError(
  'KS_ANALYZER_MALFORMED_MESSAGE',
  400,
  false,
  'An OTLP/gRPC call is not one length-prefixed message: it ended before or within its message, sent a second one, set a compressed flag without a grpc-encoding, or sent a grpc-timeout that does not parse.',
);

export const ANALYZER_UNSUPPORTED_MESSAGE_ENCODING = defineError(
  'KS_ANALYZER_UNSUPPORTED_MESSAGE_ENCODING',
  415,
  false,
  'An OTLP/gRPC call has a grpc-encoding other than gzip, deflate or identity; answered UNIMPLEMENTED with the accepted encodings in grpc-accept-encoding.',
);

export const ANALYZER_INTERNAL = defineError(
  'KS_ANALYZER_INTERNAL',
  500,
  false,
  'The decoder or the pipeline failed with an error that is not a KeyscopeError: a bug, logged with its stack.',
);

export const ANALYZER_CONFIG_INVALID = defineError(
  'KS_ANALYZER_CONFIG_INVALID',
  400,
  false,
  'The `keyscope serve` configuration (file or flags) has an unknown key or an invalid value; the message names the field.',
);

export const ANALYZER_DB_FOLDER_MISSING = defineError(
  'KS_ANALYZER_DB_FOLDER_MISSING',
  400,
  false,
  '`keyscope serve` refuses to start: the folder of `db.path` (`--db`, `KEYSCOPE_DB_PATH`) does not exist; the message names the path and the folder to create.',
);

export const ANALYZER_MAPPING_UNREADABLE = defineError(
  'KS_ANALYZER_MAPPING_UNREADABLE',
  400,
  false,
  '`keyscope serve` refuses to start: `mapping.file` (`KEYSCOPE_MAPPING_FILE`) cannot be read; the message names the path as given and as resolved against the working directory.',
);

export const ANALYZER_PORT_IN_USE = defineError(
  'KS_ANALYZER_PORT_IN_USE',
  503,
  true,
  '`keyscope serve` refuses to start: another process listens on the port of the API, the OTLP/HTTP or the OTLP/gRPC receiver; the message names the listener and its flag, field and variable.',
);

export const ANALYZER_ARCHIVE_UNWRITABLE = defineError(
  'KS_ANALYZER_ARCHIVE_UNWRITABLE',
  400,
  false,
  '`keyscope serve` refuses to start: `archive.path` (`KEYSCOPE_ARCHIVE_PATH`) cannot be created or is not a writable folder; the message names the path and why.',
);

/** Every code this service declares, for the registry test. */
export const ANALYZER_ERRORS = [
  ANALYZER_BODY_TOO_LARGE,
  ANALYZER_UNSUPPORTED_MEDIA_TYPE,
  ANALYZER_UNSUPPORTED_CONTENT_ENCODING,
  ANALYZER_BAD_COMPRESSION,
  ANALYZER_HEADERS_TIMEOUT,
  ANALYZER_BODY_TIMEOUT,
  ANALYZER_SATURATED,
  ANALYZER_SHUTTING_DOWN,
  ANALYZER_MESSAGE_TOO_LARGE,
  ANALYZER_MESSAGE_TIMEOUT,
  ANALYZER_MALFORMED_MESSAGE,
  ANALYZER_UNSUPPORTED_MESSAGE_ENCODING,
  ANALYZER_INTERNAL,
  ANALYZER_CONFIG_INVALID,
  ANALYZER_DB_FOLDER_MISSING,
  ANALYZER_MAPPING_UNREADABLE,
  ANALYZER_PORT_IN_USE,
  ANALYZER_ARCHIVE_UNWRITABLE,
] as const;
