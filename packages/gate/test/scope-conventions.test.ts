import { describe, expect, it } from 'vitest';
import { placementFromResource } from '../src/placement.ts';
import { storeIdFor } from '../src/store-id.ts';

describe('placementFromResource', () => {
  it('reads the resource attributes keyscope reads, falling back to host.name for the node', () => {
    expect(
      placementFromResource({
        'service.name': 'payments',
        'service.instance.id': 'payments-a-1',
        'host.name': 'ip-10-0-0-1',
        'k8s.cluster.name': 'eu-1',
        'cloud.region': 'eu-west-1',
      }),
    ).toEqual({ service: 'payments', node: 'payments-a-1', cluster: 'eu-1', region: 'eu-west-1' });
    expect(placementFromResource({ 'service.name': 'payments', 'host.name': 'ip-10-0-0-1' })).toEqual({
      service: 'payments',
      node: 'ip-10-0-0-1',
      cluster: '',
      region: '',
    });
  });
});

describe('storeIdFor', () => {
  const placement = { service: 'payments', node: 'payments-a-1', cluster: 'eu-1', region: '' };

  it('derives store ids as keyscope does, writing ? for what the resource does not say', () => {
    expect(storeIdFor(placement, 'node', '')).toBe('payments/node:payments-a-1');
    expect(storeIdFor(placement, 'cluster', '')).toBe('payments/cluster:eu-1');
    expect(storeIdFor(placement, 'region', '')).toBe('payments/region:?');
    expect(storeIdFor(placement, 'tenant', 'acme')).toBe('payments/tenant:acme');
    expect(storeIdFor(placement, 'global', 'acme')).toBe('payments/global');
  });
});
