import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { KeySpreads } from '../../src/coverage/key-spreads.ts';
import { ScopeReport } from '../../src/coverage/scope-report.ts';
import { tierName } from '../../src/tier-name.ts';

/** A scope report that has counted `keys` keys at payments' tier, each on one node. */
function reportWithKeys(keys: number): ScopeReport {
  const scopes = new ScopeReport();
  const stats = scopes.tierOf(tierName('payments', '/payments'), 'payments', '/payments', true);
  for (let i = 0; i < keys; i++) scopes.keySeen(stats);
  return scopes;
}

describe('KeySpreads', () => {
  it('moves a judged key from one node to the spread its evidence shows, once however often it is judged', () => {
    const scopes = reportWithKeys(1);
    const spreads = new KeySpreads(scopes);
    const evidence = [
      server({ key: 'k1', node: 'payments-a', cluster: 'c1', at: 0 }),
      server({ key: 'k1', node: 'payments-b', cluster: 'c2', at: 1 }),
    ];

    spreads.update('k1', evidence);
    spreads.update('k1', evidence);

    expect(scopes.rows()[0]!.keysSpanning).toEqual({ nodes: 0, clusters: 1, regions: 0 });
    expect(spreads.size).toBe(1);
  });

  it('counts a suspect whose lost execution ran on another node as crossing nodes, as its advice says', () => {
    const scopes = reportWithKeys(1);
    const spreads = new KeySpreads(scopes);
    // One execution in the spans, on payments-a; the send to payments-b was reset as it died.
    const evidence = [server({ key: 'k1', node: 'payments-a', at: 1 })];
    spreads.update('k1', evidence, new Map([[tierName('payments', '/payments'), ['payments-b']]]));
    expect(scopes.rows()[0]!.keysSpanning).toEqual({ nodes: 1, clusters: 0, regions: 0 });
    spreads.update('k1', evidence, new Map([[tierName('payments', '/payments'), ['payments-a']]]));
    expect(scopes.rows()[0]!.keysSpanning).toEqual({ nodes: 0, clusters: 0, regions: 0 });
  });

  it('moves the key again when its spread grows', () => {
    const scopes = reportWithKeys(1);
    const spreads = new KeySpreads(scopes);
    const first = server({ key: 'k1', node: 'payments-a', at: 0 });
    spreads.update('k1', [first, server({ key: 'k1', node: 'payments-b', at: 1 })]);
    expect(scopes.rows()[0]!.keysSpanning).toEqual({ nodes: 1, clusters: 0, regions: 0 });

    spreads.update('k1', [first, server({ key: 'k1', node: 'payments-c', region: 'us-east-1', at: 2 })]);

    expect(scopes.rows()[0]!.keysSpanning).toEqual({ nodes: 0, clusters: 0, regions: 1 });
  });

  it('forgets keys whose attempts all ended before the cutoff, leaving the scope report as counted', () => {
    const scopes = reportWithKeys(2);
    const spreads = new KeySpreads(scopes);
    const early = server({ key: 'k1', node: 'payments-a', at: 0 });
    const late = server({ key: 'k2', node: 'payments-a', at: 100 });
    spreads.update('k1', [early, server({ key: 'k1', node: 'payments-b', at: 1 })]);
    spreads.update('k2', [late]);

    spreads.forgetBefore(late.startUnixMillis);

    expect(spreads.size).toBe(1);
    expect(scopes.rows()[0]!.keysSpanning).toEqual({ nodes: 1, clusters: 0, regions: 0 });
  });
});
