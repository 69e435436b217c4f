/**
 * The gate's error codes, and the two kinds of error that carry them. The package depends on no
 * other keyscope package: a service installs it alone.
 *
 * A request code answers one client request: it has the HTTP status the fastify plugin answers
 * with (`gate.run` and `gate.admit` throw it as an `IdempotencyRequestError` for other transports
 * to translate) and says whether the client should retry. A startup code stops a service whose
 * configuration is invalid or unsound (`createIdempotencyGate`, `verify()`): it is thrown as an
 * `IdempotencyConfigError`, which has a code and a message and nothing about HTTP, because no
 * request is being answered.
 */
export interface RequestErrorDefinition {
  readonly kind: 'request';
  readonly code: string;
  readonly httpStatus: number;
  /** The client may send the same request again later (409, 503); otherwise it must change it. */
  readonly retryable: boolean;
  /** What the code means, for docs/errors.md. */
  readonly description: string;
}

export interface StartupErrorDefinition {
  readonly kind: 'startup';
  readonly code: string;
  /** Always false: the same configuration fails the same way at every start. */
  readonly retryable: false;
  readonly description: string;
}

export type GateErrorDefinition = RequestErrorDefinition | StartupErrorDefinition;

const declared = new Set<string>();

function declare<T extends GateErrorDefinition>(definition: T): T {
  if (declared.has(definition.code)) throw new Error(`error code ${definition.code} is declared twice`);
  declared.add(definition.code);
  return Object.freeze(definition);
}

function requestError(
  code: string,
  httpStatus: number,
  retryable: boolean,
  description: string,
): RequestErrorDefinition {
  return declare({ kind: 'request', code, httpStatus, retryable, description });
}

function startupError(code: string, description: string): StartupErrorDefinition {
  return declare({ kind: 'startup', code, retryable: false, description });
}

export const GATE_KEY_MISSING = requestError(
  'KS_GATE_KEY_MISSING',
  400,
  false,
  'The route requires an Idempotency-Key and the request carried none (or an empty one).',
);

export const GATE_KEY_INVALID = requestError(
  'KS_GATE_KEY_INVALID',
  400,
  false,
  'The Idempotency-Key is longer than 255 characters, has characters outside printable ASCII, or is a malformed quoted string.',
);

export const GATE_TENANT_MISSING = requestError(
  'KS_GATE_TENANT_MISSING',
  400,
  false,
  'The key scope is tenant, so every key lives in its tenant’s namespace, and the request named no tenant.',
);

export const GATE_IN_PROGRESS = requestError(
  'KS_GATE_IN_PROGRESS',
  409,
  true,
  'A request with this Idempotency-Key is still executing; retry after it completes to receive its response.',
);

export const GATE_KEY_REUSED = requestError(
  'KS_GATE_KEY_REUSED',
  422,
  false,
  'The Idempotency-Key was already used with a different request payload (fingerprint).',
);

export const GATE_STORE_UNAVAILABLE = requestError(
  'KS_GATE_STORE_UNAVAILABLE',
  503,
  true,
  'The dedup store could not be consulted; the gate fails closed and does not execute the request.',
);

export const GATE_SCOPE_NOT_COVERED = startupError(
  'KS_GATE_SCOPE_NOT_COVERED',
  'The declared key scope does not cover the declared retry scope, and neither enforced pinning nor a downstream idempotency guarantee is declared: duplicates are permitted by construction.',
);

export const GATE_CONFIG_INVALID = startupError(
  'KS_GATE_CONFIG_INVALID',
  'The gate or scope configuration has an unknown key or an invalid value; the message names the field.',
);

/** Every code this package declares, for the documentation test. */
export const GATE_ERRORS: readonly GateErrorDefinition[] = [
  GATE_KEY_MISSING,
  GATE_KEY_INVALID,
  GATE_TENANT_MISSING,
  GATE_IN_PROGRESS,
  GATE_KEY_REUSED,
  GATE_STORE_UNAVAILABLE,
  GATE_SCOPE_NOT_COVERED,
  GATE_CONFIG_INVALID,
];

/**
 * A request the gate refuses or cannot decide: answer the client with `httpStatus` (the fastify
 * plugin does, as problem+json). `retryable` says whether the same request may succeed later.
 */
export class IdempotencyRequestError extends Error {
  readonly code: string;
  readonly httpStatus: number;
  readonly retryable: boolean;

  constructor(definition: RequestErrorDefinition, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IdempotencyRequestError';
    this.code = definition.code;
    this.httpStatus = definition.httpStatus;
    this.retryable = definition.retryable;
  }
}

/**
 * A configuration the gate refuses, at startup: `KS_GATE_CONFIG_INVALID` (the message names the
 * field) or, as its subclass `IdempotencyScopeError`, `KS_GATE_SCOPE_NOT_COVERED`. Let it stop the
 * process; there is no request to answer.
 */
export class IdempotencyConfigError extends Error {
  readonly code: string;

  constructor(definition: StartupErrorDefinition, message: string) {
    super(message);
    this.name = 'IdempotencyConfigError';
    this.code = definition.code;
  }
}
