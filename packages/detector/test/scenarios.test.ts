import {
  type Attempt,
  defaultMapping,
  extractAttempts,
  type Mapping,
  mappingDecodeOptions,
  parseMapping,
} from '@keyscope/attempts';
import { decodeTraces, encodeTraces, type Span } from '@keyscope/otlp';
import {
  type DedupScope,
  duplicateSome,
  type EffectConvention,
  type GroundTruth,
  type Scenario,
  SIDE_EFFECT_SPAN_NAME,
  scenarios,
  shuffle,
  simulate,
  splitIntoPayloads,
  type TruthRoutingEvent,
} from '@keyscope/simulator';
import { describe, expect, it } from 'vitest';
import { createDetector, type Detector, type Finding, type RoutingEvent } from '../src/index.ts';

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
  ['a node browning out past the client timeout', () => scenarios.brownout()],
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

/**
 * Why each key ran twice: the simulator records the failure that broke each duplicate key's retry
 * path (or none), and keyscope must blame that failure as it inferred it from the spans — same
 * type, same node (or region) — or nothing. A failure keyscope did not infer at all (too little
 * traffic on the node to tell a silence or an error ratio) leaves its keys blamed on nothing,
 * never on another event.
 */
describe('routing attribution against the simulator’s record', () => {
  /** The inferred event that is truth's failure: same type, service, place, and overlapping. */
  function inferredAs(failure: TruthRoutingEvent, inferred: readonly RoutingEvent[]): RoutingEvent | null {
    // A node failing the requests it admitted shows in the spans as its error ratio; a node
    // browning out, as its latency.
    const type =
      failure.type === 'execution_failure'
        ? 'error_spike'
        : failure.type === 'brownout'
          ? 'latency_spike'
          : failure.type;
    const match = inferred.find(
      (event) =>
        event.type === type &&
        event.service === failure.service &&
        (type === 'region_failover' ? event.region === failure.region : event.node === failure.node) &&
        event.startUnixMillis < failure.endUnixMillis &&
        failure.startUnixMillis < event.endUnixMillis,
    );
    return match ?? null;
  }

  function withEffects(make: () => Scenario): () => Scenario {
    return () => {
      const scenario = make();
      scenario.services[0]!.effectConvention = 'attribute';
      return scenario;
    };
  }

  const EVERY_SCENARIO: [string, () => Scenario][] = [
    ...DUPLICATE_SCENARIOS,
    ...CONTROLS,
    ['a node failing payments after the charge', withEffects(scenarios.releaseAfterEffect)],
    ['a node failing payments before the charge', withEffects(scenarios.releaseBeforeEffect)],
    ['every node slowing together', () => scenarios.slowEverywhere()],
    ['payments nodes killed with their unexported spans', () => scenarios.nodeKill()],
  ];

  function blame(make: () => Scenario) {
    const { spans, truth } = simulate(make());
    const detector = detect([spans]);
    const failures = new Map(truth.routingEvents.map((e) => [e.id, e]));
    const causes = new Map(truth.keys.map((k) => [k.key, k.routingEventId]));
    const inferred = detector.routingEvents();
    return detector.findings().map((finding) => {
      const failure = failures.get(causes.get(finding.key) ?? '');
      const expected = failure === undefined ? null : inferredAs(failure, inferred);
      const blamed = finding.routing.event;
      return {
        key: finding.key,
        failure: failure?.id ?? null,
        expected: expected === null ? null : `${expected.type} ${expected.node || expected.region}`,
        blamed: blamed === null ? null : `${blamed.type} ${blamed.node || blamed.region}`,
      };
    });
  }

  it.each(EVERY_SCENARIO)(
    'blames each finding of %s on the failure that caused it, or on none',
    (_name, make) => {
      for (const row of blame(make))
        expect(row.blamed, `${row.key} (caused by ${row.failure})`).toBe(row.expected);
    },
  );

  // A brownout's service keeps its lognormal slow tail on healthy nodes too: a few keys run twice
  // with no failure behind them, and are blamed on none (the test above).
  it.each([
    ['node failover', () => scenarios.nodeFailover(), 1],
    ['region failover', () => scenarios.regionFailover(), 1],
    ['a store error spike', () => scenarios.scopeViolation(), 1],
    ['node brownout', () => scenarios.brownout(), 0.8],
  ] as const)('infers the failure behind every key a failure caused in a %s', (_name, make, causedShare) => {
    const rows = blame(make);
    const caused = rows.filter((row) => row.failure !== null);
    expect(caused.length).toBeGreaterThan(0);
    expect(caused.length).toBeGreaterThanOrEqual(causedShare * rows.length);
    for (const row of caused) expect(row.blamed, row.key).not.toBeNull();
  });

  it('ties a brownout’s duplicates to one latency_spike of the slowed node, which names the share of its slow spans', () => {
    const { spans, truth } = simulate(scenarios.brownout());
    const detector = detect([spans]);
    const [failure] = truth.routingEvents;
    const caused = truth.keys.filter((key) => key.routingEventId !== undefined);
    expect(caused.length).toBeGreaterThan(0);
    for (const key of caused) expect(key.routingEventId).toBe(failure!.id);
    const findings = detector.findings().filter((f) => f.routing.event !== null);
    const blamed = new Set(findings.map((f) => f.routing.event?.id));
    expect(blamed.size).toBe(1);
    const event = findings[0]!.routing.event!;
    expect(event).toMatchObject({ type: 'latency_spike', service: 'payments', node: failure!.node });
    expect(event.description).toMatch(
      /^\d+% of payments server spans on node \S+ took [\d.]+ s or more in \d\d:\d\d:\d\d–\d\d:\d\d:\d\d UTC \(1\d s\), against \d+% on its other nodes and \d+% in its 30 s before$/,
    );
    expect(detector.incidents().filter((i) => i.routingEvent?.type === 'latency_spike')).toHaveLength(1);
  });

  it('infers no latency_spike when every node of the service slows together', () => {
    const { spans, truth } = simulate(scenarios.slowEverywhere());
    const detector = detect([spans]);
    expect(truth.keys.length).toBeGreaterThan(0);
    expect(detector.routingEvents().filter((e) => e.type === 'latency_spike')).toEqual([]);
    for (const finding of detector.findings()) expect(finding.routing.event).toBeNull();
  });

  it('groups the demo’s node failover 7 + 7, one incident per node that died', () => {
    const { spans, truth } = simulate(scenarios.nodeFailover());
    const detector = detect([spans]);
    const perFailure = new Map<string, number>();
    for (const key of truth.keys)
      perFailure.set(key.routingEventId!, (perFailure.get(key.routingEventId!) ?? 0) + 1);
    expect([...perFailure.values()]).toEqual([7, 7]);
    const incidents = detector.incidents().sort((a, b) => a.openedUnixMillis - b.openedUnixMillis);
    expect(incidents.map((i) => [i.keys, i.routingEvent?.node])).toEqual(
      truth.routingEvents.map((failure) => [perFailure.get(failure.id), failure.node]),
    );
    for (const incident of incidents) {
      expect(incident.openedUnixMillis).toBeGreaterThanOrEqual(incident.routingEvent!.startUnixMillis);
    }
  });
});

/**
 * Delivery order, as a Kafka backlog replay or a slow Collector delivers: every span of a run in a
 * seeded random order (a span may come as late as the whole run), in batches, with the service's
 * one-second ticks in between on a clock that moves from the run's start to past its end. The
 * final findings, routing events and incidents are those of the run delivered in order.
 */
describe('spans delivered in any order', () => {
  const SECOND = 1000;

  function deliver(scenario: Scenario, payloads: Span[][]): Detector {
    const detector = createDetector();
    const mapping = defaultMapping();
    const endUnixMillis = scenario.startUnixMillis + scenario.durationMillis + 30 * SECOND;
    const stepMillis = (endUnixMillis - scenario.startUnixMillis) / payloads.length;
    let clock = scenario.startUnixMillis;
    for (const payload of payloads) {
      detector.ingest(extractAttempts(payload, mapping));
      clock += stepMillis;
      detector.tick(clock);
    }
    // The service's next ticks, once nothing more arrives: no flush, as serve never has one.
    for (let i = 0; i < 3; i++) detector.tick((clock += 10 * SECOND));
    return detector;
  }

  function outcome(detector: Detector) {
    return {
      findings: detector
        .findings()
        .map((f) => `${f.id} ${f.class} ${f.incidentId} ${f.routing.event?.id ?? '-'}`)
        .sort(),
      events: detector
        .routingEvents()
        .map((e) => `${e.id} ${e.type} ${e.node} ${e.startUnixMillis} ${e.endUnixMillis} ${e.ended}`),
      incidents: detector
        .incidents()
        .map((i) => `${i.id} ${i.keys} ${i.routingEvent?.id ?? '-'} ${i.settled}`)
        .sort(),
    };
  }

  /**
   * About 1 in 7 payloads delivered again (an exporter's or a Collector's retry resends a whole
   * payload), each a few payloads after its first delivery.
   */
  function redeliverSome(payloads: Span[][], seed: number): Span[][] {
    const again = new Map<number, Span[][]>();
    const out: Span[][] = [];
    payloads.forEach((payload, i) => {
      out.push(payload, ...(again.get(i) ?? []));
      if ((i + seed) % 7 === 0) {
        const at = i + 1 + ((i * 13 + seed) % 20);
        again.set(at, [...(again.get(at) ?? []), duplicateSome(payload, 1, seed)]);
      }
    });
    for (const [at, late] of again) if (at >= payloads.length) out.push(...late);
    return out;
  }

  const ORDERED: [string, () => Scenario][] = [
    ['node failover', () => scenarios.nodeFailover()],
    ['racing double submits', () => scenarios.race()],
    ['everything at once', () => scenarios.mixed()],
    ['a node brownout', () => scenarios.brownout()],
    ['killed nodes', () => scenarios.nodeKill()],
  ];

  it.each(ORDERED)(
    'gives %s the findings, routing events and incidents of in-order delivery',
    (_name, make) => {
      const scenario = make();
      const { spans } = simulate(scenario);
      const inOrder = outcome(deliver(scenario, splitIntoPayloads(spans, 300, 1)));
      expect(inOrder.findings.length).toBeGreaterThan(0);
      expect(inOrder).toEqual(outcome(detect([spans])));
      for (const seed of [1, 2]) {
        const shuffled = splitIntoPayloads(shuffle(spans, seed), 300, seed);
        expect(outcome(deliver(scenario, shuffled)), `seed ${seed}`).toEqual(inOrder);
        const redelivered = redeliverSome(shuffled, seed);
        expect(outcome(deliver(scenario, redelivered)), `seed ${seed}, redelivered`).toEqual(inOrder);
      }
    },
  );
});

/**
 * Services that write only `idempotency.scope`, never `idempotency.store`: keyscope derives every
 * store id, and the simulator's truth spells the documented id on its own, so a derivation that
 * named stores differently would show here as findings whose stores are not truth's.
 */
describe('ground-truth scenarios whose spans name no store', () => {
  function withDerivedStores(scenario: Scenario, scope?: DedupScope): Scenario {
    for (const service of scenario.services) {
      service.dedup.recordStoreId = false;
      if (scope !== undefined) service.dedup.scope = scope;
      if (service.downstream) service.downstream.dedup.recordStoreId = false;
    }
    return scenario;
  }

  const DERIVED: [string, () => Scenario, RegExp][] = [
    [
      'node stores in a node failover',
      () => withDerivedStores(scenarios.nodeFailover()),
      /^payments\/node:shop\./,
    ],
    [
      'node stores behind a store error spike',
      () => withDerivedStores(scenarios.scopeViolation()),
      /^payments\/node:/,
    ],
    [
      'cluster stores in a region failover',
      () => withDerivedStores(scenarios.regionFailover(), 'cluster'),
      /^payments\/cluster:prod-(euw1|use1)-(blue|green)$/,
    ],
    [
      'region stores in a region failover',
      () => withDerivedStores(scenarios.regionFailover()),
      /^payments\/region:(eu-west-1|us-east-1)$/,
    ],
    [
      'tenant stores under racing double submits',
      () => withDerivedStores(scenarios.race(), 'tenant'),
      /^payments\/tenant:/,
    ],
    [
      'a global store shared by tenants',
      () => withDerivedStores(scenarios.keyCollision()),
      /^payments\/global$/,
    ],
    [
      'every service at once',
      () => withDerivedStores(scenarios.mixed()),
      /^[a-z]+\/(node:|cluster:|region:|tenant:|global$)/,
    ],
  ];

  it.each(DERIVED)('reports the stores truth names for %s', (_name, make, spelling) => {
    const { spans, truth } = simulate(make(), { seed: 11 });
    expect(spans.some((s) => s.attributes['idempotency.store'] !== undefined)).toBe(false);
    expect(truth.keys.length).toBeGreaterThan(0);
    const findings = detect([spans]).findings();
    expectMatchesTruth(findings, truth);
    const storesByKey = new Map(findings.map((f) => [f.key, [...f.stores].sort()]));
    for (const expected of truth.keys) {
      for (const store of expected.stores) expect(store).toMatch(spelling);
      expect(storesByKey.get(expected.key), `stores of ${expected.key}`).toEqual([...expected.stores].sort());
    }
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

/**
 * A payments node that, for 20 s, admits payments, fails 60% of them, releases the key and answers
 * with an error, while a proxy re-sends each POST to the next node. The spans go through the real
 * OTLP encoder and the decoders with the mapping's selection, as the receivers hand them on.
 */
describe('admitted attempts that failed and released their key', () => {
  const SIDE_EFFECT_MAPPING = parseMapping({ sideEffectSpans: [SIDE_EFFECT_SPAN_NAME] });
  const CONFIRMED = new Set(['cross_store_duplicate', 'same_store_duplicate']);

  function runReleased(
    make: () => Scenario,
    convention: EffectConvention | undefined,
  ): { detector: Detector; truth: GroundTruth } {
    const scenario = make();
    if (convention !== undefined) scenario.services[0]!.effectConvention = convention;
    const { spans, truth } = simulate(scenario, { seed: 11 });
    const mapping: Mapping = convention === 'span' ? SIDE_EFFECT_MAPPING : defaultMapping();
    const detector = createDetector();
    for (const payload of splitIntoPayloads(spans, 50, 3)) {
      const decoded = decodeTraces(encodeTraces(payload), mappingDecodeOptions(mapping));
      detector.ingest(extractAttempts(decoded, mapping));
    }
    detector.flush();
    return { detector, truth };
  }

  it.each(['attribute', 'span'] as const)(
    'reports no duplicate for a payment that failed before the charge and ran once elsewhere, and a scope violation for each (%s convention)',
    (convention) => {
      const { detector, truth } = runReleased(scenarios.releaseBeforeEffect, convention);
      const ranOnce = truth.keys.filter((k) => k.class === 'scope_violation');
      expect(ranOnce.length).toBeGreaterThanOrEqual(50);
      const ranTwice = new Set(truth.keys.filter((k) => k.executions.length >= 2).map((k) => k.key));
      const findings = detector.findings();
      const confirmed = findings.filter((f) => CONFIRMED.has(f.class));
      const correct = confirmed.filter((f) => ranTwice.has(f.key)).length;
      expect(confirmed.length - correct).toBe(0);
      if (confirmed.length > 0) expect(correct / confirmed.length).toBeGreaterThanOrEqual(0.99);
      expect(findings.filter((f) => f.class === 'suspected_duplicate')).toEqual([]);
      const violations = new Map(
        findings.filter((f) => f.class === 'scope_violation').map((f) => [f.key, f]),
      );
      for (const key of ranOnce) {
        const violation = violations.get(key.key);
        expect(violation, `no scope violation for ${key.key}`).toBeDefined();
        expect(violation!.executions).toBe(1);
        expect(violation!.stores).toHaveLength(2);
      }
      const report = detector.scopeReport().find((row) => row.service === 'payments')!;
      expect(report.status).toBe('narrower');
      expect(report.keysAtRisk).toBeGreaterThanOrEqual(ranOnce.length);
      expect(detector.incidents().filter((i) => i.severity === 'critical')).toEqual([]);
    },
  );

  it.each(['attribute', 'span'] as const)(
    'reports every payment that failed after the charge as a confirmed duplicate (%s convention)',
    (convention) => {
      const { detector, truth } = runReleased(scenarios.releaseAfterEffect, convention);
      expect(truth.keys.length).toBeGreaterThanOrEqual(50);
      expectMatchesTruth(detector.findings(), truth);
      for (const finding of detector.findings()) {
        expect(finding.class).toBe('cross_store_duplicate');
        expect(finding.severity).toBe('critical');
        expect(finding.retriedBy).toBe('proxy');
      }
    },
  );

  it.each([
    ['before', scenarios.releaseBeforeEffect],
    ['after', scenarios.releaseAfterEffect],
  ] as const)(
    'calls every re-sent payment an unconfirmed repeat, high and never critical, without effect evidence (failure %s the charge)',
    (_phase, make) => {
      const { detector, truth } = runReleased(make, undefined);
      expect(truth.keys.length).toBeGreaterThanOrEqual(50);
      const findings = detector.findings();
      expect(new Set(findings.map((f) => f.key))).toEqual(new Set(truth.keys.map((k) => k.key)));
      for (const finding of findings) {
        expect(finding).toMatchObject({
          class: 'suspected_duplicate',
          cause: 'effect_unknown',
          severity: 'high',
        });
      }
      const incidents = detector.incidents();
      expect(incidents.length).toBeGreaterThan(0);
      for (const incident of incidents) {
        expect(incident.class).toBe('suspected_duplicate');
        expect(incident.severity).toBe('high');
        expect(incident.advice).toContain('whether its effect committed is unknown');
      }
    },
  );
});

/**
 * The spans of a proxy that re-sends a POST when a try times out, in front of a client whose
 * instrumentation records the key only once a response arrives (the send that timed out has a
 * keyless CLIENT span, which the decoder's keyed selection drops), through the real OTLP encoder
 * and decoder.
 */
describe('proxy retries and retry timing', () => {
  function runDecoded(scenario: Scenario): { detector: Detector; truth: GroundTruth } {
    const { spans, truth } = simulate(scenario, { seed: 11 });
    const mapping = defaultMapping();
    const detector = createDetector();
    for (const payload of splitIntoPayloads(spans, 50, 3)) {
      const decoded = decodeTraces(encodeTraces(payload), mappingDecodeOptions(mapping));
      detector.ingest(extractAttempts(decoded, mapping));
    }
    detector.flush();
    return { detector, truth };
  }

  it('names the proxy for at least 95% of the keys a proxy retried after a timeout', () => {
    const { detector, truth } = runDecoded(scenarios.proxyTimeoutRetry());
    const proxied = truth.keys.filter((k) => k.retriedBy === 'proxy');
    expect(proxied.length).toBeGreaterThanOrEqual(50);
    const byKey = new Map(detector.findings().map((f) => [f.key, f]));
    const named = proxied.filter((k) => byKey.get(k.key)?.retriedBy === 'proxy');
    expect(named.length / proxied.length).toBeGreaterThanOrEqual(0.95);
    const advice = detector.incidents().map((i) => i.advice);
    expect(advice.some((a) => /retried by a proxy or load balancer/.test(a))).toBe(true);
  });

  it('measures the gap between executions from start to start, and the caller’s timed-out wait', () => {
    const scenario = scenarios.slowTail();
    // The decision on the SERVER span: an execution is the whole request, so end and start differ.
    scenario.services[0]!.dedup.decisionOn = 'server_span';
    const { detector, truth } = runDecoded(scenario);
    const timeoutMillis = scenario.services[0]!.client.timeoutMillis;
    const byKey = new Map(detector.findings().map((f) => [f.key, f]));
    expect(truth.keys.length).toBeGreaterThanOrEqual(5);
    for (const key of truth.keys) {
      const finding = byKey.get(key.key)!;
      const [first, second] = key.executions;
      // Truth times the store decisions, within a millisecond of their requests' starts.
      expect(Math.abs(finding.gapMillis! - (second!.startUnixMillis - first!.startUnixMillis))).toBeLessThan(
        1,
      );
      expect(finding.idleMillis!).toBeLessThan(finding.gapMillis! - 1);
      expect(finding.idleMillis!).toBeCloseTo(finding.gapMillis! - finding.firstExecutionMillis!, 6);
      expect(Math.abs(finding.callerWaitMillis! - timeoutMillis)).toBeLessThan(1);
      expect(finding.outlivedCallerWait).toBe(finding.firstExecutionMillis! > finding.callerWaitMillis!);
    }
    // A slow tail: the first executions ran past the client's timeout, which sent the retry.
    expect(detector.findings().every((f) => f.outlivedCallerWait === true)).toBe(true);
  });
});

/**
 * Payments nodes SIGKILLed mid-run (`ProcessKillSpec`): each loses the spans it had not exported,
 * so a payment in flight on it ran there unseen, and its client's retry ran again elsewhere. The
 * truth knows which executions the spans never showed; keyscope must suspect those keys from the
 * marks left around them, and no others. The spans go through the real OTLP encoder and the
 * decoder with the mapping's keyed selection, as the receivers hand them on.
 */
describe('executions whose spans died with a killed node', () => {
  function runKilled(scenario: Scenario, seed: number) {
    const { spans, truth } = simulate(scenario, { seed });
    const mapping = defaultMapping();
    const detector = createDetector();
    const received: Attempt[] = [];
    for (const payload of splitIntoPayloads(spans, 50, 3)) {
      const decoded = decodeTraces(encodeTraces(payload), mappingDecodeOptions(mapping));
      const extracted = extractAttempts(decoded, mapping);
      received.push(...extracted.attempts);
      detector.ingest(extracted);
    }
    detector.flush();
    return { detector, truth, received };
  }

  /**
   * The keys truth says ran twice, and those of them whose first execution the spans never showed
   * while they show one other.
   */
  function ranTwice(truth: GroundTruth) {
    const twice = truth.keys.filter((k) => k.class !== 'key_collision' && k.executions.length >= 2);
    return {
      all: new Set(twice.map((k) => k.key)),
      firstUnseen: twice.filter(
        (k) => !k.executions[0]!.visible && k.executions.filter((e) => e.visible).length === 1,
      ),
    };
  }

  /**
   * Nothing of the unseen execution reached keyscope: the send that delivered it has no span in
   * what the receivers kept (its CLIENT span carried no key, so the keyed selection dropped it).
   */
  /**
   * Whether the send never became an attempt of a key: it was lost, or it arrived without its key
   * (a keyless send is linked to a key only through a server span under it, which died too).
   */
  function invisible(received: readonly Attempt[], traceId: string, sendSpanId: string): boolean {
    return !received.some((a) => a.traceId === traceId && a.spanId === sendSpanId);
  }

  it.each([11, 1, 2, 3])(
    'suspects every key whose first execution died unseen, and almost nothing else (seed %i)',
    (seed) => {
      const { detector, truth, received } = runKilled(scenarios.nodeKill(), seed);
      const { all, firstUnseen } = ranTwice(truth);
      expect(firstUnseen.length).toBeGreaterThanOrEqual(5);
      const findings = detector.findings();
      const suspected = findings.filter((f) => f.cause === 'execution_unseen');
      const byKey = new Map(suspected.map((f) => [f.key, f]));
      const inferred = new Map(detector.routingEvents().map((e) => [e.id, e]));
      for (const key of firstUnseen) {
        const lost = key.executions[0]!;
        const finding = byKey.get(key.key);
        if (finding === undefined) {
          expect(invisible(received, lost.traceId, lost.sendSpanId), `missed ${key.key}`).toBe(true);
          continue;
        }
        expect(finding).toMatchObject({ class: 'suspected_duplicate', severity: 'high', executions: 1 });
        // Blamed on the silence of the node the lost execution ran on.
        expect(finding.routing.event).toMatchObject({ type: 'node_down', node: lost.node });
      }
      const correct = suspected.filter((f) => all.has(f.key)).length;
      expect(suspected.length).toBeGreaterThan(0);
      expect(correct / suspected.length).toBeGreaterThanOrEqual(0.9);
      for (const finding of suspected) {
        const spans = new Set(finding.attempts.map((a) => `${a.traceId}/${a.spanId}`));
        expect(finding.suspicion!.evidence.length).toBeGreaterThan(0);
        for (const item of finding.suspicion!.evidence) {
          expect(spans.has(`${item.traceId}/${item.spanId}`), `${finding.key} ${item.kind}`).toBe(true);
          if (item.routingEventId !== null) expect(inferred.has(item.routingEventId)).toBe(true);
        }
      }
      // Keys whose both executions the spans show stay confirmed, of truth's class.
      const confirmed = truth.keys.filter((k) => k.executions.every((e) => e.visible));
      const classes = new Map(findings.map((f) => [f.key, f.class]));
      for (const key of confirmed) expect(classes.get(key.key), key.key).toBe(key.class);
      // One incident per node that died, never critical.
      const incidents = detector.incidents().filter((i) => i.class === 'suspected_duplicate');
      expect(incidents.every((i) => i.severity === 'high' && i.routingEvent?.type === 'node_down')).toBe(
        true,
      );
      expect(new Set(incidents.map((i) => i.routingEvent!.node)).size).toBe(incidents.length);
    },
  );

  it('names the reset of the send the lost execution came from', () => {
    const { detector, truth } = runKilled(scenarios.nodeKill(), 11);
    const byKey = new Map(detector.findings().map((f) => [f.key, f]));
    for (const key of ranTwice(truth).firstUnseen) {
      const lost = key.executions[0]!;
      const evidence = byKey.get(key.key)!.suspicion!.evidence;
      expect(evidence).toContainEqual(
        expect.objectContaining({
          kind: 'send_reset',
          strength: 'strong',
          traceId: lost.traceId,
          spanId: lost.sendSpanId,
          node: lost.node,
        }),
      );
    }
  });

  it.each([11, 1])(
    'suspects the keys whose first execution died behind a proxy that answered 502, from the 502 (seed %i)',
    (seed) => {
      const { detector, truth, received } = runKilled(scenarios.nodeKillBehindProxy(), seed);
      const { all, firstUnseen } = ranTwice(truth);
      expect(firstUnseen.length).toBeGreaterThanOrEqual(5);
      const suspected = detector.findings().filter((f) => f.cause === 'execution_unseen');
      const byKey = new Map(suspected.map((f) => [f.key, f]));
      let flagged = 0;
      for (const key of firstUnseen) {
        const lost = key.executions[0]!;
        const finding = byKey.get(key.key);
        if (finding === undefined) {
          expect(invisible(received, lost.traceId, lost.sendSpanId), `missed ${key.key}`).toBe(true);
          continue;
        }
        flagged++;
        expect(finding.routing.event).toMatchObject({ type: 'node_down', node: lost.node });
        const kinds = finding.suspicion!.evidence.map((item) => item.kind);
        expect(kinds).not.toContain('send_reset');
        expect(
          finding.suspicion!.evidence.some(
            (item) =>
              (item.kind === 'send_lost_behind_proxy' || item.kind === 'send_cut_off') &&
              item.spanId === lost.sendSpanId,
          ),
        ).toBe(true);
      }
      expect(flagged).toBeGreaterThan(0);
      expect(suspected.filter((f) => all.has(f.key)).length / suspected.length).toBeGreaterThanOrEqual(0.9);
    },
  );

  it('explains as invisible every lost execution whose send carried no key, and suspects none', () => {
    const scenario = scenarios.nodeKill();
    scenario.services[0]!.client.keyOnlyWithResponse = true;
    const { detector, truth, received } = runKilled(scenario, 11);
    const { firstUnseen } = ranTwice(truth);
    expect(firstUnseen.length).toBeGreaterThanOrEqual(5);
    for (const key of firstUnseen) {
      const lost = key.executions[0]!;
      expect(invisible(received, lost.traceId, lost.sendSpanId)).toBe(true);
    }
    expect(detector.findings().filter((f) => f.class === 'suspected_duplicate')).toEqual([]);
  });

  it('suspects the lock a killed execution left in a cluster store, once the redrive ran again', () => {
    const scenario = scenarios.clusterStoreInClusterFailover();
    for (const failure of scenario.failures)
      if (failure.type === 'node_down') failure.kill = { exportIntervalMillis: 5000 };
    scenario.services[0]!.client.redriveAfterMillis = 45_000;
    const { detector, truth } = runKilled(scenario, 11);
    const { all, firstUnseen } = ranTwice(truth);
    expect(firstUnseen.length).toBeGreaterThanOrEqual(3);
    const suspected = new Map(
      detector
        .findings()
        .filter((f) => f.cause === 'execution_unseen')
        .map((f) => [f.key, f]),
    );
    for (const key of firstUnseen) {
      const kinds = suspected.get(key.key)?.suspicion?.evidence.map((e) => e.kind);
      expect(kinds, key.key).toContain('unexplained_in_progress');
    }
    for (const key of suspected.keys()) expect(all.has(key)).toBe(true);
  });

  it.each(CONTROLS)('finds nothing with %s when the failed nodes are killed', (_name, make) => {
    const scenario = make();
    for (const failure of scenario.failures)
      if (failure.type === 'node_down') failure.kill = { exportIntervalMillis: 5000 };
    const { detector, truth } = runKilled(scenario, 11);
    expect(truth.keys).toEqual([]);
    expect(detector.findings()).toEqual([]);
    expect(detector.incidents()).toEqual([]);
  });
});
