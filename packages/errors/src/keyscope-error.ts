/**
 * The one error type every keyscope stage throws for bad input or an unavailable dependency.
 *
 * Each package declares its codes once, in its own `errors.ts`, with `defineError`. A code carries
 * everything a transport needs to answer the sender without a second lookup table per transport:
 * the HTTP status and whether the sender should retry (`retryable`) or drop the data (`permanent`).
 * `transport.ts` maps that to gRPC codes and Kafka actions.
 */
export interface ErrorDefinition {
  readonly code: string;
  readonly httpStatus: number;
  /** Permanent: bad data; retrying the same bytes fails the same way. Retryable: try again later. */
  readonly retryable: boolean;
  /** What the code means, for docs/errors.md and the error registry test. */
  readonly description: string;
}

export class KeyscopeError extends Error {
  readonly code: string;
  readonly httpStatus: number;
  readonly retryable: boolean;

  constructor(definition: ErrorDefinition, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KeyscopeError';
    this.code = definition.code;
    this.httpStatus = definition.httpStatus;
    this.retryable = definition.retryable;
  }
}

const registry = new Map<string, ErrorDefinition>();

/** Declares an error code; codes are global and unique, so a duplicate declaration throws at load. */
export function defineError(
  code: string,
  httpStatus: number,
  retryable: boolean,
  description: string,
): ErrorDefinition {
  if (registry.has(code)) throw new Error(`error code ${code} is declared twice`);
  const definition = Object.freeze({ code, httpStatus, retryable, description });
  registry.set(code, definition);
  return definition;
}

/** Every code declared so far (by the packages that have been imported). */
export function declaredErrors(): readonly ErrorDefinition[] {
  return [...registry.values()];
}

export function isKeyscopeError(value: unknown): value is KeyscopeError {
  return value instanceof KeyscopeError;
}
