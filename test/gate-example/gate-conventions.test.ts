import * as attempts from '@keyscope/attempts';
import * as gate from '@keyscope/gate';
import { describe, expect, it } from 'vitest';

/**
 * The gate cannot import the attempts stage (a service should not pull in keyscope's pipeline),
 * so it spells the conventions itself; these checks keep the two spellings one.
 */
describe('the gate writes what keyscope reads', () => {
  it('uses the scope levels and outcomes the attempts stage accepts', () => {
    expect(gate.SCOPE_LEVELS).toEqual(attempts.SCOPE_LEVELS);
    expect(gate.OUTCOMES).toEqual(attempts.OUTCOMES);
    expect(gate.EFFECTS).toEqual(attempts.EFFECTS);
  });

  it('records the attributes the default mapping reads first', () => {
    const { fields } = attempts.defaultMapping();
    expect(fields.key[0]).toBe(gate.IDEMPOTENCY_ATTRIBUTES.key);
    expect(fields.store[0]).toBe(gate.IDEMPOTENCY_ATTRIBUTES.store);
    expect(fields.scope[0]).toBe(gate.IDEMPOTENCY_ATTRIBUTES.scope);
    expect(fields.outcome[0]).toBe(gate.IDEMPOTENCY_ATTRIBUTES.outcome);
    expect(fields.tenant[0]).toBe(gate.IDEMPOTENCY_ATTRIBUTES.tenant);
    expect(fields.effect[0]).toBe(gate.IDEMPOTENCY_ATTRIBUTES.effect);
    expect(fields.released[0]).toBe(gate.IDEMPOTENCY_ATTRIBUTES.released);
  });

  it('derives the store id keyscope derives from the same scope and resource', () => {
    const resource = {
      'service.name': 'payments',
      'service.instance.id': 'payments-a-1',
      'k8s.cluster.name': 'eu-1',
      'cloud.region': 'eu-west-1',
    };
    const placement = gate.placementFromResource(resource);
    const attemptsPlacement = { ...placement, zone: '' };
    for (const level of gate.SCOPE_LEVELS) {
      expect(gate.storeIdFor(placement, level, 'acme')).toBe(
        attempts.derivedStoreId(attemptsPlacement, level, 'acme'),
      );
    }
    const bare = gate.placementFromResource({ 'host.name': 'ip-10-0-0-1' });
    expect(gate.storeIdFor(bare, 'cluster', '')).toBe(
      attempts.derivedStoreId({ ...bare, zone: '' }, 'cluster', ''),
    );
  });
});
