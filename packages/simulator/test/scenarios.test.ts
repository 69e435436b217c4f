import { SpanKind, StatusCode } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import {
  type GroundTruth,
  IDEMPOTENCY_KEY_HEADER,
  SIDE_EFFECT_SPAN_NAME,
  scenarios,
  simulate,
  simulateBatches,
} from '../src/index.ts';
import type { Scenario } from '../src/scenario.ts';

/** A named scenario at its default size and seed; its spans stream past, only the truth is kept. */
function run(build: () => Scenario): { truth: GroundTruth } {
  return { truth: simulateBatches(build()).truth() };
}

function classes(result: { truth: GroundTruth }): string[] {
  return [...new Set(result.truth.keys.map((k) => k.class + (k.cause ? `/${k.cause}` : '')))].sort();
}

describe('scenarios', () => {
  it('nodeFailover doubles payments in two node stores, each tied to a node_down event', () => {
    const result = run(scenarios.nodeFailover);
    const { keys, routingEvents } = result.truth;
    expect(keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['cross_store_duplicate']);
    const events = new Map(routingEvents.map((e) => [e.id, e]));
    for (const key of keys) {
      const event = events.get(key.routingEventId!);
      expect(event?.type).toBe('node_down');
      expect(key.retriedBy).toBe('client');
      // The first execution ran on the node that failed; the retry landed elsewhere.
      expect(key.executions[0]!.node).toBe(event!.node);
      expect(new Set(key.executions.map((e) => e.node)).size).toBe(key.executions.length);
      expect(key.stores).toHaveLength(key.executions.length);
    }
  });

  it('regionFailover doubles payments across the two regions’ stores', () => {
    const result = run(scenarios.regionFailover);
    const { keys, routingEvents } = result.truth;
    expect(keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['cross_store_duplicate']);
    expect(routingEvents).toMatchObject([
      { id: 'region_failover-1', type: 'region_failover', region: 'eu-west-1' },
    ]);
    for (const key of keys) {
      expect(key.routingEventId).toBe('region_failover-1');
      // Failover and failback both double: the order of the two regions varies.
      expect([...key.stores].sort()).toEqual(['payments-idem@eu-west-1', 'payments-idem@us-east-1']);
    }
  });

  it('slowTail doubles payments without any routing event', () => {
    const result = run(scenarios.slowTail);
    expect(result.truth.keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['cross_store_duplicate']);
    expect(result.truth.routingEvents).toEqual([]);
    expect(result.truth.keys.every((k) => k.routingEventId === undefined && k.retriedBy === 'client')).toBe(
      true,
    );
  });

  it('proxyRetry doubles payments that the client sent once', () => {
    const result = run(scenarios.proxyRetry);
    expect(result.truth.keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['cross_store_duplicate']);
    expect(result.truth.keys.every((k) => k.retriedBy === 'proxy')).toBe(true);
  });

  it('proxyTimeoutRetry doubles payments under one send, whose CLIENT span carries the key only with a response', () => {
    const { spans, truth } = simulate(scenarios.proxyTimeoutRetry());
    expect(truth.keys.length).toBeGreaterThanOrEqual(50);
    expect(classes({ truth })).toEqual(['cross_store_duplicate']);
    expect(truth.keys.every((k) => k.retriedBy === 'proxy')).toBe(true);
    // The mutation's sends (the caller's reads are keyless GETs).
    const sends = spans.filter(
      (span) => span.kind === SpanKind.CLIENT && span.attributes['http.request.method'] === 'POST',
    );
    const timedOut = sends.filter((span) => span.attributes['error.type'] === 'timeout');
    const answered = sends.filter((span) => span.attributes['http.response.status_code'] !== undefined);
    expect(timedOut.length).toBeGreaterThan(0);
    expect(timedOut.every((span) => span.attributes[IDEMPOTENCY_KEY_HEADER] === undefined)).toBe(true);
    expect(answered.every((span) => span.attributes[IDEMPOTENCY_KEY_HEADER] !== undefined)).toBe(true);
  });

  it('ttlExpired re-executes redriven payments in the same store after the key expired', () => {
    const scenario = scenarios.ttlExpired();
    const result = run(scenarios.ttlExpired);
    expect(result.truth.keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['same_store_duplicate/ttl_expired']);
    for (const key of result.truth.keys) {
      const [first, second] = key.executions;
      expect(second!.startUnixMillis - first!.startUnixMillis).toBeGreaterThan(
        scenario.services[0]!.dedup.keyTtlMillis,
      );
      expect(second!.traceId).not.toBe(first!.traceId);
    }
  });

  it('race executes double submits twice in one store without an in-flight lock', () => {
    const result = run(scenarios.race);
    expect(result.truth.keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['same_store_duplicate/race']);
    for (const key of result.truth.keys) {
      const [first, second] = key.executions;
      expect(second!.startUnixMillis - first!.startUnixMillis).toBeLessThan(100);
    }
  });

  it('downstreamAbsorbed doubles payments but not the ledger entry', () => {
    const result = simulate(scenarios.downstreamAbsorbed());
    expect(result.truth.keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['absorbed_duplicate']);
    const keys = new Set(result.truth.keys.map((k) => k.key));
    const ledgerOutcomes = new Map<string, string[]>();
    for (const span of result.spans) {
      const key = span.attributes['idempotency.key'];
      if (span.resource.attributes['service.name'] !== 'ledger' || typeof key !== 'string' || !keys.has(key))
        continue;
      ledgerOutcomes.set(key, [
        ...(ledgerOutcomes.get(key) ?? []),
        String(span.attributes['idempotency.outcome']),
      ]);
    }
    for (const key of result.truth.keys) {
      expect(key.service).toBe('payments');
      const outcomes = ledgerOutcomes.get(key.key)!;
      expect(outcomes.filter((o) => o === 'miss')).toHaveLength(1);
      expect(outcomes.length).toBe(key.executions.length);
    }
  });

  it('keyCollision serves one tenant another tenant’s replay from the global store', () => {
    const result = run(scenarios.keyCollision);
    expect(result.truth.keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['key_collision']);
    for (const key of result.truth.keys) {
      expect(key.tenants).toHaveLength(2);
      expect(key.executions).toHaveLength(1);
      expect(key.stores).toEqual(['payments/global']);
    }
  });

  it('scopeViolation runs each key once but across two node stores during an error spike', () => {
    const result = run(scenarios.scopeViolation);
    expect(result.truth.keys.length).toBeGreaterThanOrEqual(5);
    expect(classes(result)).toEqual(['scope_violation']);
    for (const key of result.truth.keys) {
      expect(key.executions.length).toBeLessThanOrEqual(1);
      expect(key.stores.length).toBeGreaterThanOrEqual(2);
      expect(key.routingEventId).toBe('error_spike-1');
    }
  });

  it('brownout runs keys twice after the client timed out on the slowed node, whose spans end at the timeout, and blames the brownout', () => {
    const { spans, truth } = simulate(scenarios.brownout());
    const [slowed] = truth.routingEvents;
    expect(slowed!.type).toBe('brownout');
    expect(classes({ truth })).toEqual(['cross_store_duplicate']);
    // Latency is lognormal with the lab's spread: a healthy node's own slow tail also crosses the
    // client's timeout now and then, and those keys run twice with no failure behind them.
    const inBrownout = truth.keys.filter((key) => key.routingEventId !== undefined);
    expect(inBrownout.length).toBeGreaterThanOrEqual(50);
    expect(inBrownout.length).toBeGreaterThanOrEqual(0.8 * truth.keys.length);
    for (const key of truth.keys) expect(key.retriedBy).toBe('client');
    for (const key of inBrownout) {
      expect(key.routingEventId).toBe(slowed!.id);
      expect(key.executions[0]!.node).toBe(slowed!.node);
    }
    // Its POSTs take 2.5 s longer while it browns out, past the client's 2 s timeout: their SERVER
    // spans end when the client gives up, as the HTTP instrumentation ends them (the lab's
    // recordings show it); the other nodes' and its own after take as long as ever.
    const median = (node: (name: string) => boolean, during: boolean) => {
      const durations = spans
        .filter(
          (s) =>
            s.kind === SpanKind.SERVER &&
            s.attributes['http.request.method'] === 'POST' &&
            s.resource.attributes['service.name'] === 'payments' &&
            node(s.resource.attributes['service.instance.id'] as string) &&
            (s.startTimeUnixMillis >= slowed!.startUnixMillis &&
              s.startTimeUnixMillis < slowed!.endUnixMillis) === during,
        )
        .map((s) => s.endTimeUnixMillis - s.startTimeUnixMillis)
        .sort((x, y) => x - y);
      return durations[durations.length >> 1]!;
    };
    const isSlowed = (name: string) => name === slowed!.node;
    const isOther = (name: string) => name !== slowed!.node;
    expect(median(isSlowed, true)).toBeGreaterThan(1900);
    expect(median(isSlowed, true)).toBeLessThanOrEqual(2000);
    expect(median(isOther, true)).toBeLessThan(500);
    expect(median(isSlowed, false)).toBeLessThan(500);
  });

  it('slowEverywhere slows every node together, and blames each duplicate on a brownout', () => {
    const { truth } = simulate(scenarios.slowEverywhere());
    expect(new Set(truth.routingEvents.map((e) => e.type))).toEqual(new Set(['brownout']));
    expect(new Set(truth.routingEvents.map((e) => e.node)).size).toBe(6);
    const ids = new Set(truth.routingEvents.map((e) => e.id));
    const inBrownout = truth.keys.filter((key) => key.routingEventId !== undefined);
    expect(inBrownout.length).toBeGreaterThanOrEqual(50);
    expect(inBrownout.length).toBeGreaterThanOrEqual(0.8 * truth.keys.length);
    for (const key of inBrownout) expect(ids.has(key.routingEventId!)).toBe(true);
  });

  it('releaseBeforeEffect runs each re-sent key once, in a second store, after a release and a 503', () => {
    const { spans, truth } = simulate(scenarios.releaseBeforeEffect());
    expect(truth.keys.length).toBeGreaterThanOrEqual(50);
    expect(classes({ truth })).toEqual(['scope_violation']);
    const failing = truth.routingEvents.find((e) => e.type === 'execution_failure')!;
    for (const key of truth.keys) {
      expect(key.executions).toHaveLength(1);
      expect(key.stores).toHaveLength(2);
      expect(key.retriedBy).toBe('proxy');
      expect(key.routingEventId).toBe(failing.id);
      expect(key.executions[0]!.node).not.toBe(failing.node);
    }
    // The failed request: admitted (its decision says miss), then 503 and ERROR on its SERVER span.
    const failed = spans.filter(
      (span) =>
        span.attributes['http.response.status_code'] === 503 &&
        span.resource.attributes['service.instance.id'] === failing.node,
    );
    expect(failed.length).toBeGreaterThanOrEqual(truth.keys.length);
    expect(failed.every((span) => span.status.code === StatusCode.ERROR)).toBe(true);
  });

  it('releaseAfterEffect charges each re-sent key twice', () => {
    const result = run(scenarios.releaseAfterEffect);
    expect(result.truth.keys.length).toBeGreaterThanOrEqual(50);
    expect(classes(result)).toEqual(['cross_store_duplicate']);
    for (const key of result.truth.keys) {
      expect(key.executions).toHaveLength(2);
      expect(key.retriedBy).toBe('proxy');
    }
  });

  it('states the effect and the release on the SERVER span with the attribute convention', () => {
    const scenario = scenarios.releaseBeforeEffect();
    scenario.services[0]!.effectConvention = 'attribute';
    const { spans } = simulate(scenario);
    const stated = (effect: string, released: boolean) =>
      spans.filter(
        (span) =>
          span.attributes['idempotency.effect'] === effect &&
          span.attributes['idempotency.released'] === released,
      );
    expect(stated('none', true).length).toBeGreaterThanOrEqual(50);
    expect(stated('none', true).every((span) => span.kind === SpanKind.SERVER)).toBe(true);
    expect(stated('committed', false).length).toBeGreaterThan(scenario.requests * 0.9);
  });

  it('emits a keyed side-effect span under each charge that committed with the span convention', () => {
    const scenario = scenarios.releaseAfterEffect();
    scenario.services[0]!.effectConvention = 'span';
    const { spans, truth } = simulate(scenario);
    const charges = spans.filter((span) => span.name === SIDE_EFFECT_SPAN_NAME);
    const executions = truth.keys.reduce((sum, key) => sum + key.executions.length, 0);
    expect(charges.length).toBeGreaterThanOrEqual(executions + truth.cleanKeys);
    expect(charges.every((span) => typeof span.attributes['idempotency.key'] === 'string')).toBe(true);
    const decisions = new Set(truth.keys.flatMap((key) => key.executions.map((e) => e.spanId)));
    expect(charges.filter((span) => decisions.has(span.parentSpanId)).length).toBe(executions);
  });

  it.each([
    ['pinnedRetries', scenarios.pinnedRetries],
    ['clusterStoreInClusterFailover', scenarios.clusterStoreInClusterFailover],
    ['globalStore', scenarios.globalStore],
  ])('%s produces no duplicates and no scope violations', (_name, build) => {
    const scenario = build();
    const result = run(build);
    expect(result.truth.routingEvents.length).toBeGreaterThan(0);
    expect(result.truth.keys).toEqual([]);
    expect(result.truth.cleanKeys).toBeGreaterThan(scenario.requests * 0.95);
  });

  it('mixed combines every class', () => {
    const result = run(scenarios.mixed);
    expect(classes(result)).toEqual([
      'absorbed_duplicate',
      'cross_store_duplicate',
      'key_collision',
      'same_store_duplicate/race',
      'same_store_duplicate/ttl_expired',
      'scope_violation',
    ]);
  });

  it('applies overrides to top-level fields', () => {
    const scenario = scenarios.slowTail({ requests: 10, durationMillis: 5000 });
    expect(scenario).toMatchObject({ requests: 10, durationMillis: 5000, name: 'slow-tail' });
    expect(simulate(scenario).truth.cleanKeys).toBeLessThanOrEqual(10);
  });

  it('returns a fresh object on every call', () => {
    const a = scenarios.nodeFailover();
    a.services[0]!.dedup.scope = 'global';
    expect(scenarios.nodeFailover().services[0]!.dedup.scope).toBe('node');
  });
});
