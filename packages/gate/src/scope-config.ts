import { invalidConfig, nonEmptyStringAt, objectAt, oneOf, stringAt } from './config-check.ts';
import type { Placement } from './placement.ts';

/**
 * Key scope levels, narrowest first, spelled as keyscope reads `idempotency.scope`. `tenant` is a
 * namespace rather than a placement: one store per tenant, reachable from every node.
 */
export type ScopeLevel = 'node' | 'cluster' | 'region' | 'tenant' | 'global';
export const SCOPE_LEVELS: readonly ScopeLevel[] = ['node', 'cluster', 'region', 'tenant', 'global'];

/** How far retries can travel, narrowest first. */
export type PlacementLevel = 'node' | 'cluster' | 'region' | 'global';
export const PLACEMENT_LEVELS: readonly PlacementLevel[] = ['node', 'cluster', 'region', 'global'];

/** One instance a retry (or a failover, or a proxy's retry) of a request can reach. */
export interface RetryEndpoint {
  /** `service.instance.id` (or `host.name`) of that instance. */
  readonly node: string;
  /** '' when unknown; required when the key scope is cluster. */
  readonly cluster: string;
  /** '' when unknown; required when the key scope is region. */
  readonly region: string;
}

/**
 * Every endpoint one logical request can reach before the client gives up: either the list, or a
 * level relative to this instance (`{ level: 'cluster' }`: any instance of this cluster).
 */
export type RetryScope =
  | { readonly level: PlacementLevel }
  | { readonly endpoints: readonly RetryEndpoint[] };

/**
 * `enforced`: retries cannot reach another endpoint (the client or the balancer guarantees it, also
 * during failover). `best_effort` (sticky sessions, consistent hashing that moves on failure) is
 * recorded for the error message but is not a guarantee.
 */
export type Pinning = 'none' | 'best_effort' | 'enforced';
export const PINNINGS: readonly Pinning[] = ['none', 'best_effort', 'enforced'];

/** What a service declares about its dedup; checked by `verify()` against docs/design.md's three conditions. */
export interface ScopeConfig {
  /** This instance, usually `placementFromResource(resource.attributes)`. */
  readonly placement: Placement;
  /** The namespace of the dedup store that admits a key. */
  readonly keyScope: ScopeLevel;
  readonly retryScope: RetryScope;
  /** Default `none`. */
  readonly pinning?: Pinning;
  /** Declares that the side effect itself absorbs a repeat, and says what does (e.g. "ledger dedups on the key"). */
  readonly downstream?: { readonly guarantee: string };
}

/** A checked, frozen copy; throws KS_GATE_CONFIG_INVALID naming the field. */
export function checkScopeConfig(value: unknown, path = 'scope'): ScopeConfig {
  const config = objectAt(value, path, ['placement', 'keyScope', 'retryScope', 'pinning', 'downstream']);
  const placement = checkPlacement(config.placement, `${path}.placement`);
  const keyScope = oneOf(config.keyScope, `${path}.keyScope`, SCOPE_LEVELS);
  if (keyScope === 'node' || keyScope === 'cluster' || keyScope === 'region') {
    if (placement[keyScope] === '') {
      throw invalidConfig(
        `${path}.placement.${keyScope}`,
        `this instance's ${IDENTITY_SOURCE[keyScope]} for key scope ${keyScope}`,
        placement[keyScope],
      );
    }
  }
  const retryScope = checkRetryScope(config.retryScope, `${path}.retryScope`, keyScope);
  const checked: ScopeConfig = {
    placement,
    keyScope,
    retryScope,
    pinning: config.pinning === undefined ? 'none' : oneOf(config.pinning, `${path}.pinning`, PINNINGS),
    ...(config.downstream === undefined
      ? {}
      : {
          downstream: Object.freeze({
            guarantee: nonEmptyStringAt(
              objectAt(config.downstream, `${path}.downstream`, ['guarantee']).guarantee,
              `${path}.downstream.guarantee`,
            ),
          }),
        }),
  };
  return Object.freeze(checked);
}

const IDENTITY_SOURCE = {
  node: 'service.instance.id or host.name',
  cluster: 'k8s.cluster.name',
  region: 'cloud.region',
} as const;

function checkPlacement(value: unknown, path: string): Placement {
  const placement = objectAt(value, path, ['service', 'node', 'cluster', 'region']);
  return Object.freeze({
    service: nonEmptyStringAt(placement.service, `${path}.service`),
    node: stringAt(placement.node ?? '', `${path}.node`),
    cluster: stringAt(placement.cluster ?? '', `${path}.cluster`),
    region: stringAt(placement.region ?? '', `${path}.region`),
  });
}

function checkRetryScope(value: unknown, path: string, keyScope: ScopeLevel): RetryScope {
  const scope = objectAt(value, path, ['level', 'endpoints']);
  if ((scope.level === undefined) === (scope.endpoints === undefined)) {
    throw invalidConfig(path, 'an object with exactly one of level, endpoints', value);
  }
  if (scope.level !== undefined) {
    return Object.freeze({ level: oneOf(scope.level, `${path}.level`, PLACEMENT_LEVELS) });
  }
  if (!Array.isArray(scope.endpoints) || scope.endpoints.length === 0) {
    throw invalidConfig(`${path}.endpoints`, 'a non-empty list of endpoints', scope.endpoints);
  }
  const endpoints = scope.endpoints.map((entry: unknown, index) => {
    const at = `${path}.endpoints[${index}]`;
    const endpoint = objectAt(entry, at, ['node', 'cluster', 'region']);
    const checked = Object.freeze({
      node: nonEmptyStringAt(endpoint.node, `${at}.node`),
      cluster: stringAt(endpoint.cluster ?? '', `${at}.cluster`),
      region: stringAt(endpoint.region ?? '', `${at}.region`),
    });
    // Comparing an unknown identity would be a guess either way: demand the one the key scope needs.
    if ((keyScope === 'cluster' || keyScope === 'region') && checked[keyScope] === '') {
      throw invalidConfig(
        `${at}.${keyScope}`,
        `the endpoint's ${keyScope} to compare with key scope ${keyScope}`,
        '',
      );
    }
    return checked;
  });
  return Object.freeze({ endpoints: Object.freeze(endpoints) });
}
