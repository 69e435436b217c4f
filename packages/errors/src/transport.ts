import type { KeyscopeError } from './keyscope-error.ts';

/**
 * gRPC status codes (grpc/status.proto) that keyscope answers with. Kept here as numbers so the
 * stages do not depend on a gRPC library.
 */
export const GrpcCode = {
  OK: 0,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
  PERMISSION_DENIED: 7,
  NOT_FOUND: 5,
} as const;

export type KafkaAction = 'skip' | 'retry';

/** The one table from an error to each transport's answer. */
export function grpcCodeFor(error: KeyscopeError): number {
  if (error.httpStatus === 429) return GrpcCode.RESOURCE_EXHAUSTED;
  if (error.retryable) return GrpcCode.UNAVAILABLE;
  if (error.httpStatus === 401) return GrpcCode.UNAUTHENTICATED;
  if (error.httpStatus === 403) return GrpcCode.PERMISSION_DENIED;
  if (error.httpStatus === 404) return GrpcCode.NOT_FOUND;
  if (error.httpStatus >= 500) return GrpcCode.INTERNAL;
  return GrpcCode.INVALID_ARGUMENT;
}

/** A Kafka consumer skips permanent errors (poison messages) and retries retryable ones. */
export function kafkaActionFor(error: KeyscopeError): KafkaAction {
  return error.retryable ? 'retry' : 'skip';
}
