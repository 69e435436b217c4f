import type { Placement } from '../src/placement.ts';
import type { ScopeConfig } from '../src/scope-config.ts';

export const NODE_A: Placement = {
  service: 'payments',
  node: 'payments-a-1',
  cluster: 'eu-1',
  region: 'eu-west-1',
};

/** A node-scoped store whose retries stay on the node: sound by scope. */
export function nodeScope(overrides: Partial<ScopeConfig> = {}): ScopeConfig {
  return { placement: NODE_A, keyScope: 'node', retryScope: { level: 'node' }, ...overrides };
}
