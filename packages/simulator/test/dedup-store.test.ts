import { describe, expect, it } from 'vitest';
import { KeyStores, storeIdFor } from '../src/dedup-store.ts';
import type { DedupSpec } from '../src/scenario.ts';
import type { SimNode } from '../src/topology.ts';

function dedup(overrides: Partial<DedupSpec> = {}): DedupSpec {
  return {
    scope: 'cluster',
    keyTtlMillis: 60_000,
    inFlightLock: true,
    inFlightLeaseMillis: 30_000,
    fingerprintsPayload: false,
    decisionOn: 'check_span',
    recordStoreId: true,
    storeErrorRate: 0,
    ...overrides,
  };
}

const node = {
  service: 'payments',
  instanceId: 'shop.payments-abc-1.payments',
  cluster: 'prod-a',
  region: 'eu-west-1',
  zone: 'eu-west-1a',
} as SimNode;

describe('KeyStores', () => {
  it('admits a new key and replays it once the execution completed', () => {
    const stores = new KeyStores();
    const first = stores.decide('s', dedup(), 0, 'p');
    expect(first).toMatchObject({ outcome: 'miss', admission: 'fresh' });
    stores.complete(first.record!, 500);
    expect(stores.decide('s', dedup(), 600, 'p').outcome).toBe('hit');
  });

  it('answers in_progress to a concurrent attempt when the store holds an in-flight lock', () => {
    const stores = new KeyStores();
    stores.decide('s', dedup(), 0, 'p');
    expect(stores.decide('s', dedup(), 10, 'p').outcome).toBe('in_progress');
  });

  it('admits a concurrent attempt when the store has no in-flight lock', () => {
    const stores = new KeyStores();
    const spec = dedup({ inFlightLock: false });
    stores.decide('s', spec, 0, 'p');
    expect(stores.decide('s', spec, 10, 'p')).toMatchObject({ outcome: 'miss', admission: 'concurrent' });
  });

  it('admits the key again after its TTL expired', () => {
    const stores = new KeyStores();
    const first = stores.decide('s', dedup(), 0, 'p');
    stores.complete(first.record!, 100);
    expect(stores.decide('s', dedup(), 60_001, 'p')).toMatchObject({ outcome: 'miss', admission: 'expired' });
  });

  it('admits the key again when an abandoned in-flight lock outlived its lease', () => {
    const stores = new KeyStores();
    stores.decide('s', dedup(), 0, 'p');
    expect(stores.decide('s', dedup(), 30_000, 'p')).toMatchObject({
      outcome: 'miss',
      admission: 'lease_expired',
    });
  });

  it('answers mismatch to another payload only when the store fingerprints payloads', () => {
    const plain = new KeyStores();
    plain.complete(plain.decide('s', dedup(), 0, 'a').record!, 1);
    expect(plain.decide('s', dedup(), 2, 'b').outcome).toBe('hit');
    const fingerprinting = new KeyStores();
    const spec = dedup({ fingerprintsPayload: true });
    fingerprinting.complete(fingerprinting.decide('s', spec, 0, 'a').record!, 1);
    expect(fingerprinting.decide('s', spec, 2, 'b').outcome).toBe('mismatch');
  });

  it('keeps stores apart', () => {
    const stores = new KeyStores();
    stores.complete(stores.decide('node-a', dedup(), 0, 'p').record!, 1);
    expect(stores.decide('node-b', dedup(), 2, 'p').outcome).toBe('miss');
  });
});

describe('storeIdFor', () => {
  it('names one store per placement of the declared scope', () => {
    expect(storeIdFor('payments', dedup({ scope: 'node' }), node, 'acme')).toBe(
      'payments-idem@shop.payments-abc-1.payments',
    );
    expect(storeIdFor('payments', dedup({ scope: 'cluster' }), node, 'acme')).toBe('payments-idem@prod-a');
    expect(storeIdFor('payments', dedup({ scope: 'region' }), node, 'acme')).toBe('payments-idem@eu-west-1');
    expect(storeIdFor('payments', dedup({ scope: 'tenant' }), node, 'acme')).toBe(
      'payments-idem@tenant-acme',
    );
    expect(storeIdFor('payments', dedup({ scope: 'global' }), node, 'acme')).toBe('payments-idem@global');
  });

  it('spells the id keyscope documents deriving from the scope and resource when spans omit idempotency.store', () => {
    const spec = (scope: DedupSpec['scope']) => dedup({ scope, recordStoreId: false });
    expect(storeIdFor('payments', spec('node'), node, 'acme')).toBe(
      'payments/node:shop.payments-abc-1.payments',
    );
    expect(storeIdFor('payments', spec('cluster'), node, 'acme')).toBe('payments/cluster:prod-a');
    expect(storeIdFor('payments', spec('region'), node, 'acme')).toBe('payments/region:eu-west-1');
    expect(storeIdFor('payments', spec('tenant'), node, 'acme')).toBe('payments/tenant:acme');
    expect(storeIdFor('payments', spec('global'), node, 'acme')).toBe('payments/global');
  });
});
