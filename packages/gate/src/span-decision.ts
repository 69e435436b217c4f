import type { Span } from '@opentelemetry/api';
import type { ScopeLevel } from './scope-config.ts';

/**
 * What the dedup store answered, spelled as keyscope reads `idempotency.outcome`: `miss` (admitted:
 * the work ran), `hit` (replayed), `in_progress` (409), `mismatch` (422), `error` (the store could
 * not answer: nothing ran).
 */
export type Outcome = 'miss' | 'hit' | 'in_progress' | 'mismatch' | 'error';
export const OUTCOMES: readonly Outcome[] = ['miss', 'hit', 'in_progress', 'mismatch', 'error'];

/**
 * `idempotency.effect`: whether the side effect of the request took place — `committed`, `none`,
 * or `unknown` (an admitted request still running, or one that failed without saying how far it
 * got). keyscope counts an admitted request that failed with effect `none` as no execution.
 */
export type Effect = 'committed' | 'none' | 'unknown';
export const EFFECTS: readonly Effect[] = ['committed', 'none', 'unknown'];

/** The attribute names of docs/design.md, "The evidence". */
export const IDEMPOTENCY_ATTRIBUTES = Object.freeze({
  key: 'idempotency.key',
  store: 'idempotency.store',
  scope: 'idempotency.scope',
  outcome: 'idempotency.outcome',
  effect: 'idempotency.effect',
  released: 'idempotency.released',
  tenant: 'tenant.id',
});

export interface Decision {
  readonly key: string;
  readonly store: string;
  readonly scope: ScopeLevel;
  readonly outcome: Outcome;
  readonly effect: Effect;
  /** The key was given back after the request failed, so that a retry executes. */
  readonly released: boolean;
  /** '' when unknown: then `tenant.id` is left to whoever knows it. */
  readonly tenant: string;
}

/**
 * Writes one decision on `span`; a later one on the same span overwrites it (an admitted request's
 * effect goes from `unknown` to `committed` when it completes, or it is released when it fails).
 */
export function recordDecision(span: Span | undefined, decision: Decision): void {
  if (span === undefined || !span.isRecording()) return;
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.key, decision.key);
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.store, decision.store);
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.scope, decision.scope);
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.outcome, decision.outcome);
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.effect, decision.effect);
  span.setAttribute(IDEMPOTENCY_ATTRIBUTES.released, decision.released);
  if (decision.tenant !== '') span.setAttribute(IDEMPOTENCY_ATTRIBUTES.tenant, decision.tenant);
}
