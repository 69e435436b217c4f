import { describe, expect, it } from 'vitest';
import { IdempotencyScopeError } from '../src/idempotency-scope-error.ts';
import type { Placement } from '../src/placement.ts';
import type { RetryEndpoint, ScopeConfig } from '../src/scope-config.ts';
import { dedupMode, smallestCoveringLevel, verify } from '../src/verify.ts';
import { NODE_A } from './scopes.ts';

const A1: RetryEndpoint = { node: 'payments-a-1', cluster: 'eu-1', region: 'eu-west-1' };
const A2: RetryEndpoint = { node: 'payments-a-2', cluster: 'eu-1', region: 'eu-west-1' };
const B1: RetryEndpoint = { node: 'payments-b-1', cluster: 'eu-2', region: 'eu-west-1' };
const C1: RetryEndpoint = { node: 'payments-c-1', cluster: 'us-1', region: 'us-east-1' };

function config(
  keyScope: ScopeConfig['keyScope'],
  retryScope: ScopeConfig['retryScope'],
  more = {},
): ScopeConfig {
  return { placement: NODE_A, keyScope, retryScope, ...more };
}

function scopeError(scope: ScopeConfig): IdempotencyScopeError {
  try {
    verify(scope);
  } catch (error) {
    expect(error).toBeInstanceOf(IdempotencyScopeError);
    return error as IdempotencyScopeError;
  }
  throw new Error('verify() passed');
}

describe('verify and dedupMode', () => {
  it.each([
    ['node', { level: 'node' }],
    ['cluster', { level: 'cluster' }],
    ['region', { level: 'cluster' }],
    ['region', { level: 'region' }],
    ['tenant', { level: 'global' }],
    ['global', { level: 'global' }],
    ['node', { endpoints: [A1] }],
    ['cluster', { endpoints: [A1, A2] }],
    ['region', { endpoints: [A1, A2, B1] }],
    ['tenant', { endpoints: [A1, C1] }],
    ['global', { endpoints: [A1, C1] }],
  ] as const)('passes key scope %s over retry scope %j by scope', (keyScope, retryScope) => {
    const scope = config(keyScope, retryScope);
    expect(dedupMode(scope)).toBe('scope');
    expect(verify(scope)).toBe('scope');
  });

  it.each([
    ['node', { level: 'cluster' }],
    ['node', { endpoints: [A1, A2] }],
    ['cluster', { level: 'region' }],
    ['cluster', { endpoints: [A1, B1] }],
    ['region', { level: 'global' }],
    ['region', { endpoints: [A1, C1] }],
  ] as const)(
    'refuses key scope %s under retry scope %j with KS_GATE_SCOPE_NOT_COVERED',
    (keyScope, retryScope) => {
      const scope = config(keyScope, retryScope);
      expect(dedupMode(scope)).toBeNull();
      const error = scopeError(scope);
      expect(error).toMatchObject({ code: 'KS_GATE_SCOPE_NOT_COVERED', keyScope });
      // A startup refusal answers no request: no HTTP status, nothing to retry.
      expect(error).not.toHaveProperty('httpStatus');
    },
  );

  it('passes a narrower key scope when pinning is enforced', () => {
    const scope = config('node', { endpoints: [A1, A2] }, { pinning: 'enforced' });
    expect(dedupMode(scope)).toBe('pinned');
    expect(verify(scope)).toBe('pinned');
  });

  it('does not count best-effort pinning, and says so', () => {
    const scope = config('node', { endpoints: [A1, A2] }, { pinning: 'best_effort' });
    expect(dedupMode(scope)).toBeNull();
    expect(scopeError(scope).message).toContain('best_effort');
  });

  it('passes a narrower key scope when a downstream idempotency guarantee is declared', () => {
    const scope = config(
      'node',
      { level: 'region' },
      { downstream: { guarantee: 'ledger dedups on the key' } },
    );
    expect(dedupMode(scope)).toBe('downstream');
    expect(verify(scope)).toBe('downstream');
  });

  it('prefers scope over pinning over downstream when several hold', () => {
    const downstream = { guarantee: 'ledger dedups on the key' };
    expect(dedupMode(config('cluster', { level: 'cluster' }, { pinning: 'enforced', downstream }))).toBe(
      'scope',
    );
    expect(dedupMode(config('node', { level: 'cluster' }, { pinning: 'enforced', downstream }))).toBe(
      'pinned',
    );
  });

  it('names both scopes and the smallest covering level, and says global is not required', () => {
    const error = scopeError(config('node', { endpoints: [A1, A2] }));
    expect(error.message).toContain(
      'key scope node (payments-a-1) does not cover retry scope cluster (eu-1: payments-a-1, payments-a-2)',
    );
    expect(error.message).toContain('widen the key namespace to cluster (eu-1)');
    expect(error.message).toContain('a global namespace is not required');
    expect(error).toMatchObject({ retryScope: 'cluster', smallestCoveringLevel: 'cluster' });
  });

  it('recommends the region, not global, when retries cross clusters of one region', () => {
    const error = scopeError(config('cluster', { endpoints: [A1, B1] }));
    expect(error.message).toContain(
      'key scope cluster (eu-1) does not cover retry scope region (eu-west-1: eu-1/payments-a-1, eu-2/payments-b-1)',
    );
    expect(error.smallestCoveringLevel).toBe('region');
  });

  it('recommends global only when retries cross regions', () => {
    const error = scopeError(config('region', { endpoints: [A1, C1] }));
    expect(error.message).toContain(
      'retry scope global (eu-west-1/eu-1/payments-a-1, us-east-1/us-1/payments-c-1)',
    );
    expect(error.smallestCoveringLevel).toBe('global');
    expect(error.message).not.toContain('not required');
  });

  it('describes a retry scope given as a level by this instance’s identity', () => {
    const error = scopeError(config('node', { level: 'cluster' }));
    expect(error.message).toContain(
      'key scope node (payments-a-1) does not cover retry scope cluster (eu-1)',
    );
  });

  it('refuses a malformed configuration with KS_GATE_CONFIG_INVALID instead of guessing', () => {
    const invalid = (scope: unknown) =>
      expect(() => dedupMode(scope as ScopeConfig)).toThrow(
        expect.objectContaining({ code: 'KS_GATE_CONFIG_INVALID' }),
      );
    invalid(config('zone' as 'node', { level: 'node' }));
    invalid(config('node', { level: 'node' }, { pining: 'enforced' }));
    invalid(config('node', { level: 'node' }, { pinning: 'always' }));
    invalid(config('node', { level: 'node', endpoints: [A1] } as unknown as ScopeConfig['retryScope']));
    invalid(config('node', { endpoints: [] }));
    invalid(config('cluster', { endpoints: [{ node: 'payments-a-2', cluster: '', region: '' }] }));
    invalid(config('node', { level: 'node' }, { downstream: { guarantee: ' ' } }));
    invalid({ ...config('node', { level: 'node' }), placement: { ...NODE_A, node: '' } satisfies Placement });
  });

  it('finds the smallest covering level without claiming a level whose identity is unknown', () => {
    expect(smallestCoveringLevel(config('node', { endpoints: [A1] }))).toBe('node');
    expect(smallestCoveringLevel(config('node', { endpoints: [A1, A2] }))).toBe('cluster');
    const noClusters = [
      { node: 'payments-a-1', cluster: '', region: 'eu-west-1' },
      { node: 'payments-a-2', cluster: '', region: 'eu-west-1' },
    ];
    expect(smallestCoveringLevel(config('node', { endpoints: noClusters }))).toBe('region');
  });
});
