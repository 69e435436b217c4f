import { dedupMode, IdempotencyScopeError, verify } from '@keyscope/gate';
import { describe, expect, it } from 'vitest';
import { declaredScope } from './dedup-stores.ts';

const placement = { service: 'payments', node: 'payments-a', cluster: 'lab', region: 'local' };

describe('the scopes the lab’s payments nodes declare', () => {
  it('cover a retry anywhere in the cluster with the cluster’s store, as verify() checks at the gate’s start', () => {
    expect(verify(declaredScope(placement, 'cluster'))).toBe('scope');
  });

  it('cover only the node with a node store: a retry the proxy sends to another node is what it does not cover', () => {
    expect(verify(declaredScope(placement, 'node'))).toBe('scope');
    expect(dedupMode({ ...declaredScope(placement, 'node'), retryScope: { level: 'cluster' } })).toBeNull();
    expect(() => verify({ ...declaredScope(placement, 'node'), retryScope: { level: 'cluster' } })).toThrow(
      IdempotencyScopeError,
    );
  });
});
