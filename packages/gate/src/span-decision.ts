import type { Span } from '@opentelemetry/api';
import type { ScopeLevel } from './scope-config.ts';

/**
 * What the dedup store answered, spelled as keyscope reads `idempotency.outcome`: `miss` (admitted
 * and executed), `hit` (replayed), `in_progress` (409), `mismatch` (422), `error` (the store could
 * not answer, or the execution failed and its key was released: not an execution that counts).
 */
export type Outcome = 'miss' | 'hit' | 'in_progress' | 'mismatch' | 'error';
export const OUTCOMES: readonly Outcome[] = ['miss', 'hit', 'in_progress', 'mismatch', 'error'];

/** The attribute names of DESIGN.md, "Input conventions". */
export const IDEMPOTENCY_ATTRIBUTES = Object.freeze({
  key: 'idempotency.key',
  store: 'idempotency.store',
  scope: 'idempotency.scope',
  outcome: 'idempotency.outcome',
  tenant: 'tenant.id',
});

export interface Decision {
  readonly key: string;
  readonly store: string;
  readonly scope: ScopeLevel;
  readonly outcome: Outcome;
  /** '' when unknown: then `tenant.id` is left to whoever knows it. */
  readonly tenant: string;
}

/** Writes one decision on `span`; a later decision on the same span (miss → error) overwrites it. */
export function recordDecision(span: Span | undefined, decision: Decision): void {
  if (span === undefined || !span.isRecording()) return;
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.key, decision.key);
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.store, decision.store);
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.scope, decision.scope);
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.outcome, decision.outcome);
  if (decision.tenant !== '') span.setAttribute(IDEMPOTENCY_ATTRIBUTES.tenant, decision.tenant);
}
