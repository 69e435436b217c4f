import { defineError } from '@keyscope/errors';

/**
 * The gate's error codes. The first five answer a client's request (the fastify plugin turns them
 * into problem+json responses; `gate.run` throws them); the last two stop a service at startup.
 */
export const GATE_KEY_MISSING = defineError(
  'KS_GATE_KEY_MISSING',
  400,
  false,
  'The route requires an Idempotency-Key and the request carried none (or an empty one).',
);

export const GATE_KEY_INVALID = defineError(
  'KS_GATE_KEY_INVALID',
  400,
  false,
  'The Idempotency-Key is longer than 255 characters, has characters outside printable ASCII, or is a malformed quoted string.',
);

export const GATE_TENANT_MISSING = defineError(
  'KS_GATE_TENANT_MISSING',
  400,
  false,
  'The key scope is tenant, so every key lives in its tenant’s namespace, and the request named no tenant.',
);

export const GATE_IN_PROGRESS = defineError(
  'KS_GATE_IN_PROGRESS',
  409,
  true,
  'A request with this Idempotency-Key is still executing; retry after it completes to receive its response.',
);

export const GATE_KEY_REUSED = defineError(
  'KS_GATE_KEY_REUSED',
  422,
  false,
  'The Idempotency-Key was already used with a different request payload (fingerprint).',
);

export const GATE_STORE_UNAVAILABLE = defineError(
  'KS_GATE_STORE_UNAVAILABLE',
  503,
  true,
  'The dedup store could not be consulted; the gate fails closed and does not execute the request.',
);

export const GATE_SCOPE_NOT_COVERED = defineError(
  'KS_GATE_SCOPE_NOT_COVERED',
  400,
  false,
  'The declared key scope does not cover the declared retry scope, and neither enforced pinning nor a downstream idempotency guarantee is declared: duplicates are permitted by construction.',
);

export const GATE_CONFIG_INVALID = defineError(
  'KS_GATE_CONFIG_INVALID',
  400,
  false,
  'The gate or scope configuration has an unknown key or an invalid value; the message names the field.',
);

/** Every code this package declares, for the documentation test. */
export const GATE_ERRORS = [
  GATE_KEY_MISSING,
  GATE_KEY_INVALID,
  GATE_TENANT_MISSING,
  GATE_IN_PROGRESS,
  GATE_KEY_REUSED,
  GATE_STORE_UNAVAILABLE,
  GATE_SCOPE_NOT_COVERED,
  GATE_CONFIG_INVALID,
] as const;
