import { defaultMapping, extractAttempts } from '@keyscope/attempts';
import type { Span } from '@keyscope/otlp';
import {
  duplicateSome,
  type GroundTruth,
  type Scenario,
  scenarios,
  shuffle,
  simulate,
  splitIntoPayloads,
} from '@keyscope/simulator';
import { describe, expect, it } from 'vitest';
import { createDetector, type Detector, type Finding } from '../src/index.ts';

/**
 * Ground-truth scenarios from the simulator: every truth duplicate found and correctly
 * classified, nothing found on controls — also when spans arrive shuffled, redelivered and split
 * across many payloads.
 */
function detect(payloads: Span[][]): Detector {
  const detector = createDetector();
  const mapping = defaultMapping();
  // Redelivered spans give their attempts again: the detector's attempt log refuses them.
  for (const payload of payloads) detector.ingest(extractAttempts(payload, mapping));
  detector.flush();
  return detector;
}

function expectMatchesTruth(findings: Finding[], truth: GroundTruth): void {
  const byKey = new Map(findings.map((f) => [f.key, f]));
  expect(findings).toHaveLength(truth.keys.length);
  for (const expected of truth.keys) {
    const found = byKey.get(expected.key);
    expect(found, `missed ${expected.class} of ${expected.key}`).toBeDefined();
    expect({ key: found!.key, class: found!.class, cause: found!.cause ?? undefined }).toEqual({
      key: expected.key,
      class: expected.class,
      cause: expected.class === 'same_store_duplicate' ? expected.cause : (found!.cause ?? undefined),
    });
    expect(found!.service).toBe(expected.service);
    expect(found!.operation).toBe(expected.operation);
    if (expected.class !== 'key_collision' && expected.class !== 'scope_violation') {
      expect(found!.executions).toBe(expected.executions.length);
      expect(found!.retriedBy).toBe(expected.retriedBy);
    }
  }
}

const DUPLICATE_SCENARIOS: [string, () => Scenario][] = [
  ['node failover', () => scenarios.nodeFailover()],
  ['region failover', () => scenarios.regionFailover()],
  ['slow tails with broken affinity', () => scenarios.slowTail()],
  ['a proxy retrying non-idempotent requests', () => scenarios.proxyRetry()],
  ['retries after the key expired', () => scenarios.ttlExpired()],
  ['double submits racing without an in-flight lock', () => scenarios.race()],
  ['a downstream dedup absorbing the repeat', () => scenarios.downstreamAbsorbed()],
  ['tenants reusing keys on a global store', () => scenarios.keyCollision()],
  ['retries reaching a second store without executing', () => scenarios.scopeViolation()],
  ['everything at once', () => scenarios.mixed()],
];

const CONTROLS: [string, () => Scenario][] = [
  ['pinned retries', () => scenarios.pinnedRetries()],
  ['a cluster-wide store with in-cluster failover', () => scenarios.clusterStoreInClusterFailover()],
  ['a global store', () => scenarios.globalStore()],
];

describe('ground-truth scenarios', () => {
  it.each(DUPLICATE_SCENARIOS)('finds and classifies every duplicate of %s', (_name, make) => {
    const { spans, truth } = simulate(make(), { seed: 11 });
    expect(truth.keys.length).toBeGreaterThan(0);
    expectMatchesTruth(detect([spans]).findings(), truth);
  });

  it.each(CONTROLS)('finds nothing with %s', (_name, make) => {
    const { spans, truth } = simulate(make(), { seed: 11 });
    expect(truth.keys).toEqual([]);
    const detector = detect([spans]);
    expect(detector.findings()).toEqual([]);
    expect(detector.incidents()).toEqual([]);
  });

  it.each([...DUPLICATE_SCENARIOS.slice(0, 3), ...DUPLICATE_SCENARIOS.slice(8)])(
    'gives the same findings and incident ids for %s shuffled, redelivered and split into payloads',
    (_name, make) => {
      const { spans, truth } = simulate(make(), { seed: 5 });
      const baseline = summarize(detect([spans]));
      for (const seed of [1, 2, 3]) {
        const delivered = splitIntoPayloads(duplicateSome(shuffle(spans, seed), 0.2, seed), 40, seed);
        const detector = detect(delivered);
        expect(summarize(detector)).toEqual(baseline);
        expectMatchesTruth(detector.findings(), truth);
      }
    },
  );

  it('ties failover duplicates to the failover, one incident per routing event', () => {
    const { spans, truth } = simulate(scenarios.nodeFailover(), { seed: 11 });
    const detector = detect([spans]);
    const truthEvents = new Map(truth.routingEvents.map((e) => [e.id, e]));
    const causedBy = new Map(truth.keys.map((k) => [k.key, k.routingEventId]));
    const incidentsPerEvent = new Map<string, Set<string>>();
    for (const finding of detector.findings()) {
      const truthEvent = truthEvents.get(causedBy.get(finding.key) ?? '');
      if (truthEvent === undefined) continue;
      expect(finding.routing.event?.node).toBe(truthEvent.node);
      expect(finding.routing.affinityBroken).toBe(true);
      const set = incidentsPerEvent.get(truthEvent.id) ?? new Set();
      set.add(finding.incidentId);
      incidentsPerEvent.set(truthEvent.id, set);
    }
    expect(incidentsPerEvent.size).toBeGreaterThan(0);
    for (const incidents of incidentsPerEvent.values()) expect(incidents.size).toBe(1);
  });

  it('ties a region failover’s duplicates to one region_failover incident', () => {
    const { spans, truth } = simulate(scenarios.regionFailover(), { seed: 11 });
    const detector = detect([spans]);
    expect(truth.routingEvents.map((e) => e.type)).toContain('region_failover');
    const incidents = detector.incidents().filter((i) => i.class === 'cross_store_duplicate');
    expect(incidents).toHaveLength(1);
    expect(incidents[0]!.routingEvent?.type).toBe('region_failover');
  });
});

function summarize(detector: Detector) {
  return {
    findings: detector
      .findings()
      .map((f) => `${f.id} ${f.class} ${f.cause} ${f.incidentId} ${f.executions} ${f.retriedBy}`)
      .sort(),
    incidents: detector
      .incidents()
      .map((i) => `${i.id} ${i.keys} ${i.status}`)
      .sort(),
  };
}
