import { GATE_SCOPE_NOT_COVERED, IdempotencyConfigError } from './errors.ts';
import type { PlacementLevel, ScopeLevel } from './scope-config.ts';

/**
 * Thrown by `verify()` (and so by `createIdempotencyGate`) when none of docs/design.md's three validity
 * conditions holds. Carries the levels as data so a caller can act on them without parsing text.
 */
export class IdempotencyScopeError extends IdempotencyConfigError {
  readonly keyScope: ScopeLevel;
  /** The level the declared retry scope spans (relative to this instance). */
  readonly retryScope: PlacementLevel;
  /** The narrowest key namespace that would make the configuration sound by scope. */
  readonly smallestCoveringLevel: PlacementLevel;

  constructor(
    message: string,
    levels: { keyScope: ScopeLevel; retryScope: PlacementLevel; smallestCoveringLevel: PlacementLevel },
  ) {
    super(GATE_SCOPE_NOT_COVERED, message);
    this.name = 'IdempotencyScopeError';
    this.keyScope = levels.keyScope;
    this.retryScope = levels.retryScope;
    this.smallestCoveringLevel = levels.smallestCoveringLevel;
  }
}
