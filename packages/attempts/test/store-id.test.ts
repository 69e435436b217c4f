import { describe, expect, it } from 'vitest';
import type { ServerAttempt } from '../src/attempt.ts';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping } from '../src/mapping.ts';
import { resource, type SpanOptions, serverSpan } from '../src/testing.ts';

const placed = resource({
  service: 'payments',
  instance: 'payments-a-1',
  cluster: 'eu-1',
  region: 'eu-west-1',
  zone: 'eu-west-1a',
});

function storeOf(options: SpanOptions): string {
  const { attempts } = extractAttempts(
    [serverSpan({ key: 'k1', outcome: 'miss', resource: placed, ...options })],
    defaultMapping(),
  );
  return (attempts[0] as ServerAttempt).store;
}

describe('store ids', () => {
  it('uses idempotency.store verbatim, without the service prefix', () => {
    expect(storeOf({ store: 'redis-eu', scope: 'node' })).toBe('redis-eu');
  });

  it('derives a node store from service.instance.id', () => {
    expect(storeOf({ scope: 'node' })).toBe('payments/node:payments-a-1');
  });

  it('derives a node store from host.name when service.instance.id is absent', () => {
    expect(storeOf({ scope: 'node', resource: resource({ service: 'payments', host: 'host-7' }) })).toBe(
      'payments/node:host-7',
    );
  });

  it('derives a cluster store from k8s.cluster.name', () => {
    expect(storeOf({ scope: 'cluster' })).toBe('payments/cluster:eu-1');
  });

  it('derives a region store from cloud.region', () => {
    expect(storeOf({ scope: 'region' })).toBe('payments/region:eu-west-1');
  });

  it('derives a tenant store from the tenant', () => {
    expect(storeOf({ scope: 'tenant', tenant: 'acme' })).toBe('payments/tenant:acme');
  });

  it('derives one global store per service', () => {
    expect(storeOf({ scope: 'global' })).toBe('payments/global');
  });

  it('names the store <service>/unknown when neither store nor scope is declared', () => {
    expect(storeOf({})).toBe('payments/unknown');
  });

  it('writes ? for a placement value the resource does not carry', () => {
    expect(storeOf({ scope: 'cluster', resource: resource({ service: 'payments', instance: 'a-1' }) })).toBe(
      'payments/cluster:?',
    );
    expect(storeOf({ scope: 'tenant' })).toBe('payments/tenant:?');
  });

  it('keeps two services on one host in two node stores', () => {
    const ledger = resource({ service: 'ledger', instance: 'payments-a-1' });
    expect(storeOf({ scope: 'node', resource: ledger })).not.toBe(storeOf({ scope: 'node' }));
  });
});
