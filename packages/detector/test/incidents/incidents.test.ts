import type { Attempt } from '@keyscope/attempts';
import { activity, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import {
  createDetector,
  defaultDetectorConfig,
  FINDING_CLASSES,
  type FindingClass,
  incidentOfMembers,
} from '../../src/index.ts';

// payments nodes a, b, c serve steadily; node a goes silent from second 60 to 120.
const traffic = [
  ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
  ...activity({ node: 'a', fromSecond: 120, toSecond: 180 }),
  ...activity({ node: 'b', fromSecond: 0, toSecond: 180 }),
  ...activity({ node: 'c', fromSecond: 0, toSecond: 180 }),
];

/**
 * Keys executed on node a just before it went down and again after it: acme's retries landed on
 * node b (store B), globex's on node c (store C), a second later than acme's.
 */
function failoverDuplicates(tenant: 'acme' | 'globex', count: number): Attempt[] {
  const [node, store, offset] = tenant === 'acme' ? ['b', 'B', 0] : ['c', 'C', 1];
  const out: Attempt[] = [];
  for (let i = 0; i < count; i++) {
    const key = `${tenant}-${i}`;
    const at = 58 + offset / 2 + i * 0.05;
    out.push(server({ key, tenant, node: 'a', store: 'A', at, durationMillis: 1900 }));
    out.push(server({ key, tenant, node, store, at: at + 3, scope: 'node' }));
  }
  return out;
}

function detectFailover() {
  const detector = createDetector();
  detector.ingest({
    attempts: [...failoverDuplicates('acme', 3), ...failoverDuplicates('globex', 2)],
    activity: traffic,
    invalid: { outcome: 0, hit: 0, scope: 0 },
  });
  detector.flush();
  return detector;
}

describe("a tenant's view of an incident", () => {
  it("counts and names only that tenant's keys, stores and nodes", () => {
    const detector = detectFailover();
    // One failover is one incident for on-call, whichever tenants it touched.
    const [incident, ...others] = detector.incidents();
    expect(others).toEqual([]);
    expect(incident).toMatchObject({ keys: 5, stores: ['A', 'B', 'C'], nodes: ['a', 'b', 'c'] });

    const acme = detector.findings().filter((finding) => finding.tenant === 'acme');
    const view = incidentOfMembers(incident!, acme, 1_000);
    expect(view).toMatchObject({ keys: 3, stores: ['A', 'B'], nodes: ['a', 'b'] });
    expect(view.title).toMatch(/^payments \/payments: 3 keys executed twice/);
    // Per key, and for the incident: every key ran in two stores, the incident's in three.
    expect(view.advice).toContain('Each key executed in 2 different dedup stores:');
    expect(incident!.advice).toContain('Each key executed in 2 different dedup stores (3 stores in all)');
    expect(view.openedUnixMillis).toBe(Math.min(...acme.map((f) => f.repeatUnixMillis)));
    expect(view.lastFindingUnixMillis).toBe(Math.max(...acme.map((f) => f.lastSeenUnixMillis)));

    const globex = incidentOfMembers(
      incident!,
      detector.findings().filter((finding) => finding.tenant === 'globex'),
      1_000,
    );
    expect(globex).toMatchObject({ keys: 2, stores: ['A', 'C'], nodes: ['a', 'c'] });
  });

  it('keeps the incident’s id, class, status and routing event', () => {
    const detector = detectFailover();
    const [incident] = detector.incidents();
    const view = incidentOfMembers(incident!, detector.findings().slice(0, 1), 1_000);
    expect(view).toMatchObject({
      id: incident!.id,
      class: incident!.class,
      status: incident!.status,
      routingEvent: incident!.routingEvent,
    });
    expect(view.routingEvent?.type).toBe('node_down');
    expect(view.title).toContain('during node down of a');
  });

  it('needs at least one finding', () => {
    const [incident] = detectFailover().incidents();
    expect(() => incidentOfMembers(incident!, [], 1_000)).toThrow(RangeError);
  });
});

describe('incident titles', () => {
  const expected: Record<FindingClass, string> = {
    cross_store_duplicate: 'executed twice in different dedup stores',
    same_store_duplicate: 'executed twice in one dedup store',
    absorbed_duplicate: 'executed twice, each repeat caught by a dedup store downstream',
    suspected_duplicate: 'ran again after a failed attempt whose effect is unknown',
    key_collision: 'shared across tenants',
    scope_violation: 'whose retries reach more than one dedup store',
  };

  it.each(FINDING_CLASSES)('read as a sentence about the keys for %s', (findingClass) => {
    const detector = detectFailover();
    const [incident] = detector.incidents();
    const findings = detector.findings();
    const asClass = { ...incident!, class: findingClass, routingEvent: null };
    expect(incidentOfMembers(asClass, findings.slice(0, 1), 1_000).title).toBe(
      `payments /payments: 1 key ${expected[findingClass]}`,
    );
    expect(incidentOfMembers(asClass, findings.slice(0, 2), 1_000).title).toBe(
      `payments /payments: 2 keys ${expected[findingClass]}`,
    );
  });
});

/** `keys` keys, each executed once in each of `stores` stores on as many nodes: store `s<key>-<i>`. */
function spreadKeys(keys: number, stores: number, prefix = 's'): Attempt[] {
  const out: Attempt[] = [];
  for (let k = 0; k < keys; k++) {
    for (let i = 0; i < stores; i++) {
      const name = `${String(k).padStart(2, '0')}-${String(i).padStart(3, '0')}`;
      out.push(
        server({
          key: `key-${k}`,
          node: `n${name}`,
          store: `${prefix}${name}`,
          at: 10 + i * 0.01,
          scope: 'node',
        }),
      );
    }
  }
  return out;
}

function detectSpread(
  attempts: Attempt[],
  caps: { maxStoresPerFinding: number; maxStoresPerIncident: number },
) {
  const detector = createDetector({ ...defaultDetectorConfig(), ...caps });
  detector.ingest({ attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } });
  detector.flush();
  return detector;
}

describe('store and node lists', () => {
  it('lists a finding’s first stores and nodes up to maxStoresPerFinding and counts them all', () => {
    const detector = detectSpread(spreadKeys(1, 30), { maxStoresPerFinding: 4, maxStoresPerIncident: 1_000 });
    const [finding] = detector.findings();
    expect(finding).toMatchObject({
      class: 'cross_store_duplicate',
      executions: 30,
      stores: ['s00-000', 's00-001', 's00-002', 's00-003'],
      storesTotal: 30,
      nodes: ['n00-000', 'n00-001', 'n00-002', 'n00-003'],
      nodesTotal: 30,
    });
    expect(detector.stats()).toMatchObject({ findingStoresLeftOut: 26, findingNodesLeftOut: 26 });
  });

  it('lists an incident’s first stores in name order up to maxStoresPerIncident, counting every store of every key', () => {
    const detector = detectSpread(spreadKeys(5, 40), { maxStoresPerFinding: 3, maxStoresPerIncident: 10 });
    const [incident, ...others] = detector.incidents();
    expect(others).toEqual([]);
    // Counted from the keys' attempts, not from their findings' cut lists.
    expect(incident).toMatchObject({ keys: 5, storesTotal: 200, nodesTotal: 200 });
    expect(incident!.stores).toEqual(Array.from({ length: 10 }, (_, i) => `s00-00${i}`));
    expect(incident!.nodes).toHaveLength(10);
    expect(incident!.advice).toContain('Each key executed in 40 different dedup stores (200 stores in all)');
    expect(detector.stats()).toMatchObject({
      incidentStoresLeftOut: 190,
      incidentNodesLeftOut: 190,
      findingStoresLeftOut: 5 * 37,
    });
  });

  it('counts what a list leaves out once as the list grows, not at every summary', () => {
    const caps = { maxStoresPerFinding: 2, maxStoresPerIncident: 5 };
    const detector = createDetector({ ...defaultDetectorConfig(), ...caps });
    const attempts = spreadKeys(1, 20);
    const none = { outcome: 0, hit: 0, scope: 0 };
    detector.ingest({ attempts: attempts.slice(0, 10), activity: [], invalid: none });
    expect(detector.stats()).toMatchObject({ findingStoresLeftOut: 8, incidentStoresLeftOut: 5 });
    detector.ingest({ attempts: attempts.slice(10), activity: [], invalid: none });
    detector.flush();
    detector.flush();
    expect(detector.stats()).toMatchObject({ findingStoresLeftOut: 18, incidentStoresLeftOut: 15 });
  });

  it('keeps a tenant’s view of an incident exact past the findings’ cut lists', () => {
    const detector = detectSpread(spreadKeys(3, 12), { maxStoresPerFinding: 2, maxStoresPerIncident: 4 });
    const [incident] = detector.incidents();
    const view = incidentOfMembers(incident!, detector.findings().slice(0, 2), 4);
    expect(view).toMatchObject({ keys: 2, storesTotal: 24, nodesTotal: 24 });
    expect(view.stores).toEqual(['s00-000', 's00-001', 's00-002', 's00-003']);
  });
});
