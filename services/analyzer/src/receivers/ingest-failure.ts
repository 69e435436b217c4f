import { GrpcCode, grpcCodeFor, isKeyscopeError } from '@keyscope/errors';
import {
  ANALYZER_BAD_COMPRESSION,
  ANALYZER_BODY_TIMEOUT,
  ANALYZER_BODY_TOO_LARGE,
  ANALYZER_HEADERS_TIMEOUT,
  ANALYZER_MALFORMED_MESSAGE,
  ANALYZER_MESSAGE_TIMEOUT,
  ANALYZER_MESSAGE_TOO_LARGE,
  ANALYZER_SATURATED,
  ANALYZER_SHUTTING_DOWN,
  ANALYZER_UNSUPPORTED_CONTENT_ENCODING,
  ANALYZER_UNSUPPORTED_MEDIA_TYPE,
  ANALYZER_UNSUPPORTED_MESSAGE_ENCODING,
} from '../errors.ts';
import type { ReceiverRejectReason, RejectReason } from './ingest-counters.ts';

/**
 * How a refused payload is answered, in one place for both transports: the HTTP status and the
 * gRPC code, whether the sender should retry, and the reason it is counted under.
 */
export interface IngestFailure {
  readonly reason: RejectReason;
  readonly httpStatus: number;
  readonly grpcCode: number;
  /** Retryable failures carry Retry-After over HTTP. */
  readonly retryable: boolean;
  /** For the sender: google.rpc.Status message / gRPC status details. */
  readonly message: string;
}

const REASON_BY_CODE: ReadonlyMap<string, ReceiverRejectReason> = new Map([
  [ANALYZER_BODY_TOO_LARGE.code, 'body_too_large'],
  [ANALYZER_UNSUPPORTED_MEDIA_TYPE.code, 'unsupported_media_type'],
  [ANALYZER_UNSUPPORTED_CONTENT_ENCODING.code, 'unsupported_content_encoding'],
  [ANALYZER_BAD_COMPRESSION.code, 'bad_compression'],
  [ANALYZER_HEADERS_TIMEOUT.code, 'headers_timeout'],
  [ANALYZER_BODY_TIMEOUT.code, 'body_timeout'],
  [ANALYZER_SATURATED.code, 'saturated'],
  [ANALYZER_SHUTTING_DOWN.code, 'shutting_down'],
  [ANALYZER_MESSAGE_TOO_LARGE.code, 'message_too_large'],
  [ANALYZER_MESSAGE_TIMEOUT.code, 'message_timeout'],
  [ANALYZER_MALFORMED_MESSAGE.code, 'malformed_message'],
  [ANALYZER_UNSUPPORTED_MESSAGE_ENCODING.code, 'unsupported_content_encoding'],
]);

/**
 * OTLP/gRPC refusals whose code the gRPC and OTLP specifications name, where the HTTP status
 * would map to another: a message too large is RESOURCE_EXHAUSTED (which OTLP clients do not
 * retry without RetryInfo), a message that did not arrive in time DEADLINE_EXCEEDED (which they
 * retry), an encoding the server lacks UNIMPLEMENTED.
 */
const GRPC_CODE_BY_CODE: ReadonlyMap<string, number> = new Map([
  [ANALYZER_MESSAGE_TOO_LARGE.code, GrpcCode.RESOURCE_EXHAUSTED],
  [ANALYZER_MESSAGE_TIMEOUT.code, GrpcCode.DEADLINE_EXCEEDED],
  [ANALYZER_UNSUPPORTED_MESSAGE_ENCODING.code, GrpcCode.UNIMPLEMENTED],
]);

/** OTLP/HTTP clients retry exactly these; any other 4xx/5xx makes them drop the data. */
const RETRYABLE_HTTP_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

export const INTERNAL_FAILURE: IngestFailure = Object.freeze({
  reason: 'internal_error',
  httpStatus: 500,
  grpcCode: GrpcCode.INTERNAL,
  retryable: false,
  message: 'internal error; the keyscope log has the details',
});

export function ingestFailureFor(error: unknown): IngestFailure {
  if (!isKeyscopeError(error) || !error.code.startsWith('KS_')) return INTERNAL_FAILURE;
  const reason: RejectReason = REASON_BY_CODE.get(error.code) ?? (error.code as `KS_${string}`);
  if (error.retryable) {
    return {
      reason,
      httpStatus: error.httpStatus === 429 ? 429 : 503,
      // Not RESOURCE_EXHAUSTED: OTLP clients retry it only when the status carries RetryInfo,
      // which this receiver does not attach; UNAVAILABLE is what the spec asks for backpressure.
      grpcCode: GrpcCode.UNAVAILABLE,
      retryable: true,
      message: error.message,
    };
  }
  const httpStatus =
    error.httpStatus >= 400 && !RETRYABLE_HTTP_STATUSES.has(error.httpStatus) ? error.httpStatus : 500;
  const grpcCode = GRPC_CODE_BY_CODE.get(error.code) ?? grpcCodeFor(error);
  return { reason, httpStatus, grpcCode, retryable: false, message: error.message };
}
