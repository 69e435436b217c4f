import { IdempotencyScopeError } from './idempotency-scope-error.ts';
import {
  checkScopeConfig,
  PLACEMENT_LEVELS,
  type PlacementLevel,
  type RetryEndpoint,
  type ScopeConfig,
  type ScopeLevel,
} from './scope-config.ts';

/**
 * Which of docs/design.md's conditions for sound dedup makes a dedup configuration sound: the key namespace
 * spans every endpoint a retry can reach (`scope`), retries are enforced to hit one endpoint
 * (`pinned`), or the side effect absorbs a repeat (`downstream`).
 */
export type DedupMode = 'scope' | 'pinned' | 'downstream';

/**
 * The first condition that holds, checked in that order (scope needs no promise from anyone else),
 * or null when none does. Throws KS_GATE_CONFIG_INVALID for a malformed configuration.
 */
export function dedupMode(config: ScopeConfig): DedupMode | null {
  return modeOf(checkScopeConfig(config));
}

function modeOf(checked: ScopeConfig): DedupMode | null {
  if (keyScopeCovers(checked)) return 'scope';
  if (checked.pinning === 'enforced') return 'pinned';
  if (checked.downstream !== undefined) return 'downstream';
  return null;
}

/**
 * Refuses a configuration that permits duplicates by construction: returns the condition that makes
 * it sound, or throws `IdempotencyScopeError` naming both scopes and the smallest covering level.
 */
export function verify(config: ScopeConfig): DedupMode {
  const checked = checkScopeConfig(config);
  const mode = modeOf(checked);
  if (mode !== null) return mode;
  const smallest = coveringLevel(checked);
  throw new IdempotencyScopeError(scopeMessage(checked, smallest), {
    keyScope: checked.keyScope,
    retryScope: smallest,
    smallestCoveringLevel: smallest,
  });
}

/**
 * The narrowest placement level that holds this instance and every retry endpoint: the key scope
 * to widen to. A level whose identity is unknown on either side cannot be claimed, so the answer
 * moves up rather than guessing.
 */
export function smallestCoveringLevel(config: ScopeConfig): PlacementLevel {
  return coveringLevel(checkScopeConfig(config));
}

function coveringLevel({ retryScope, placement }: ScopeConfig): PlacementLevel {
  if ('level' in retryScope) return retryScope.level;
  for (const level of PLACEMENT_LEVELS) {
    if (level === 'global') break;
    const own = placement[level];
    if (own !== '' && retryScope.endpoints.every((endpoint) => endpoint[level] === own)) return level;
  }
  return 'global';
}

function keyScopeCovers(config: ScopeConfig): boolean {
  const { keyScope, retryScope, placement } = config;
  // One namespace for every placement: a tenant's store is reachable from every node.
  if (keyScope === 'tenant' || keyScope === 'global') return true;
  if ('level' in retryScope) {
    return PLACEMENT_LEVELS.indexOf(keyScope) >= PLACEMENT_LEVELS.indexOf(retryScope.level);
  }
  return retryScope.endpoints.every((endpoint) => endpoint[keyScope] === placement[keyScope]);
}

function scopeMessage(config: ScopeConfig, smallest: PlacementLevel): string {
  const keyScope = describeKeyScope(config, config.keyScope);
  const retryScope = describeRetryScope(config, smallest);
  const widen =
    smallest === 'global'
      ? 'widen the key namespace to global (the retries cross regions; tenant works where keys are unique per tenant)'
      : `widen the key namespace to ${describeKeyScope(config, smallest)}, the smallest level that covers every retry (a global namespace is not required)`;
  const pinning =
    config.pinning === 'best_effort'
      ? ' Pinning is declared best_effort, which does not count: affinity breaks exactly when a node fails over.'
      : '';
  return (
    `key scope ${keyScope} does not cover retry scope ${retryScope}: a retry that reaches another ` +
    `endpoint is admitted again by that endpoint's store. Either ${widen}, or enforce pinning ` +
    `(pinning: 'enforced'), or declare a downstream idempotency guarantee (downstream.guarantee).${pinning}`
  );
}

function describeKeyScope(config: ScopeConfig, level: ScopeLevel): string {
  if (level === 'tenant' || level === 'global') return level;
  return `${level} (${config.placement[level] || '?'})`;
}

function describeRetryScope(config: ScopeConfig, spread: PlacementLevel): string {
  const { retryScope } = config;
  if ('level' in retryScope) return describeKeyScope(config, retryScope.level);
  const names = distinct(retryScope.endpoints.map((endpoint) => endpointName(endpoint, spread)));
  if (spread === 'global') return `global (${names.join(', ')})`;
  if (spread === 'node') return describeKeyScope(config, 'node');
  return `${spread} (${config.placement[spread]}: ${names.join(', ')})`;
}

/** An endpoint named by the levels below the spread: within one cluster its node suffices. */
function endpointName(endpoint: RetryEndpoint, spread: PlacementLevel): string {
  const parts =
    spread === 'global'
      ? [endpoint.region, endpoint.cluster, endpoint.node]
      : spread === 'region'
        ? [endpoint.cluster, endpoint.node]
        : [endpoint.node];
  return parts.map((part) => part || '?').join('/');
}

function distinct(values: readonly string[]): string[] {
  return [...new Set(values)];
}
