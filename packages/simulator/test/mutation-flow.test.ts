import { type Span, SpanKind, StatusCode } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY_HEADER, scenarios, simulate } from '../src/index.ts';

function keyOf(span: Span): string | undefined {
  const header = span.attributes[IDEMPOTENCY_KEY_HEADER];
  return Array.isArray(header) ? (header[0] as string) : undefined;
}

function byId(spans: Span[]): Map<string, Span> {
  return new Map(spans.map((s) => [s.traceId + s.spanId, s]));
}

describe('mutation spans', () => {
  const failover = simulate(scenarios.nodeFailover({ requests: 400, durationMillis: 20_000 }));
  const spans = failover.spans;
  const index = byId(spans);

  it('parents every keyed SERVER span on the CLIENT span that sent it, with the same key', () => {
    const servers = spans.filter((s) => s.kind === SpanKind.SERVER && keyOf(s) !== undefined);
    expect(servers.length).toBeGreaterThan(0);
    for (const server of servers) {
      const client = index.get(server.traceId + server.parentSpanId)!;
      expect(client.kind).toBe(SpanKind.CLIENT);
      expect(keyOf(client)).toBe(keyOf(server));
      expect(server.name).toBe('POST /payments');
      expect(server.attributes).toMatchObject({
        'http.route': '/payments',
        'http.request.method': 'POST',
        'url.path': '/payments',
      });
      expect(typeof server.attributes['http.response.status_code']).toBe('number');
    }
  });

  it('captures the idempotency key header as a one-element string array', () => {
    const keyed = spans.filter((s) => s.attributes[IDEMPOTENCY_KEY_HEADER] !== undefined);
    expect(keyed.length).toBeGreaterThan(0);
    for (const span of keyed) {
      const header = span.attributes[IDEMPOTENCY_KEY_HEADER] as unknown[];
      expect(header).toHaveLength(1);
      expect(typeof header[0]).toBe('string');
    }
  });

  it('records the dedup decision on an idempotency.check child of the SERVER span', () => {
    const checks = spans.filter((s) => s.name === 'idempotency.check');
    expect(checks.length).toBeGreaterThan(0);
    for (const check of checks) {
      expect(check.kind).toBe(SpanKind.INTERNAL);
      expect(check.scope.name).toBe('payments');
      const server = index.get(check.traceId + check.parentSpanId)!;
      expect(server.kind).toBe(SpanKind.SERVER);
      expect(check.attributes).toMatchObject({
        'idempotency.key': keyOf(server),
        'idempotency.scope': 'node',
        'http.route': '/payments',
      });
      expect(['miss', 'hit', 'in_progress', 'mismatch', 'error']).toContain(
        check.attributes['idempotency.outcome'],
      );
      expect(check.attributes['idempotency.store']).toMatch(/^payments-idem@/);
      expect(typeof check.attributes['tenant.id']).toBe('string');
    }
  });

  it('counts resends per submission and writes the count only on resends', () => {
    const sends = new Map<string, Span[]>();
    for (const span of spans) {
      if (span.kind !== SpanKind.CLIENT || keyOf(span) === undefined) continue;
      const id = span.traceId + span.parentSpanId;
      sends.set(id, [...(sends.get(id) ?? []), span]);
    }
    let resent = 0;
    for (const series of sends.values()) {
      series.sort((a, b) => a.startTimeUnixMillis - b.startTimeUnixMillis);
      expect(series[0]!.attributes['http.request.resend_count']).toBeUndefined();
      expect(series.slice(1).map((span) => span.attributes['http.request.resend_count'])).toEqual(
        series.slice(1).map((_, i) => i + 1),
      );
      if (series.length > 1) resent++;
    }
    expect(resent).toBeGreaterThan(0);
  });

  it('marks a timed-out send as an error without a status code', () => {
    const timeouts = spans.filter(
      (s) => s.kind === SpanKind.CLIENT && keyOf(s) !== undefined && s.attributes['error.type'] === 'timeout',
    );
    expect(timeouts.length).toBeGreaterThan(0);
    for (const span of timeouts) {
      expect(span.status.code).toBe(StatusCode.ERROR);
      expect(span.attributes['http.response.status_code']).toBeUndefined();
      expect(span.events.map((e) => e.name)).toEqual(['exception']);
      expect(span.endTimeUnixMillis - span.startTimeUnixMillis).toBeCloseTo(2000, 0);
    }
  });

  it('shares one resource per node carrying placement and SDK attributes', () => {
    const resources = new Map<string, Span['resource']>();
    for (const span of spans) {
      const id = span.resource.attributes['service.instance.id'] as string;
      const seen = resources.get(id);
      if (seen) expect(span.resource).toBe(seen);
      else resources.set(id, span.resource);
    }
    for (const resource of resources.values()) {
      expect(Object.keys(resource.attributes)).toEqual(
        expect.arrayContaining([
          'service.name',
          'service.instance.id',
          'host.name',
          'k8s.cluster.name',
          'k8s.namespace.name',
          'k8s.pod.name',
          'cloud.region',
          'cloud.availability_zone',
          'telemetry.sdk.name',
          'telemetry.sdk.language',
          'telemetry.sdk.version',
          'process.pid',
          'process.runtime.name',
          'process.runtime.version',
          'os.type',
          'host.arch',
          'deployment.environment.name',
        ]),
      );
    }
  });

  it('shares one instrumentation scope object per instrumentation', () => {
    const scopes = new Map<string, Span['scope']>();
    for (const span of spans) {
      const seen = scopes.get(span.scope.name);
      if (seen) expect(span.scope).toBe(seen);
      else scopes.set(span.scope.name, span.scope);
    }
    expect([...scopes.keys()]).toEqual(
      expect.arrayContaining([
        '@opentelemetry/instrumentation-http',
        '@opentelemetry/instrumentation-pg',
        'payments',
      ]),
    );
  });

  it('writes 32- and 16-character hex ids and keeps roots parentless', () => {
    for (const span of spans) {
      expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(span.parentSpanId).toMatch(/^([0-9a-f]{16})?$/);
    }
    expect(spans.filter((s) => s.parentSpanId === '').every((s) => s.kind !== SpanKind.CLIENT)).toBe(true);
  });

  it('sees every true execution as a miss span in the store the truth names', () => {
    const executions = failover.truth.keys.flatMap((k) => k.executions);
    expect(executions.length).toBeGreaterThan(0);
    for (const execution of executions) {
      const span = index.get(execution.traceId + execution.spanId)!;
      expect(span.attributes['idempotency.outcome']).toBe('miss');
      expect(span.attributes['idempotency.store']).toBe(execution.store);
      expect(span.resource.attributes['service.instance.id']).toBe(execution.node);
      expect(span.startTimeUnixMillis).toBe(execution.startUnixMillis);
    }
  });

  it('emits no SERVER span on a node while it is down', () => {
    for (const event of failover.truth.routingEvents) {
      const silent = spans.filter(
        (s) =>
          s.kind === SpanKind.SERVER &&
          s.resource.attributes['service.instance.id'] === event.node &&
          s.startTimeUnixMillis >= event.startUnixMillis &&
          s.startTimeUnixMillis < event.endUnixMillis,
      );
      expect(silent).toEqual([]);
    }
  });
});

describe('mutation spans, by service options', () => {
  it('sends two server spans under one client span when a proxy retries', () => {
    const { spans } = simulate(scenarios.proxyRetry({ requests: 200 }));
    const children = new Map<string, number>();
    for (const span of spans) {
      if (span.kind === SpanKind.SERVER && keyOf(span) !== undefined) {
        const parent = span.traceId + span.parentSpanId;
        children.set(parent, (children.get(parent) ?? 0) + 1);
      }
    }
    expect(Math.max(...children.values())).toBe(2);
    const proxied = spans.find((s) => s.kind === SpanKind.CLIENT && keyOf(s) !== undefined)!;
    expect(proxied.attributes['network.peer.address']).toBe('10.0.0.10');
  });

  it('records the decision on the SERVER span when the service says so', () => {
    const { spans } = simulate(scenarios.downstreamAbsorbed({ requests: 100 }));
    const ledger = spans.filter(
      (s) =>
        s.resource.attributes['service.name'] === 'ledger' && s.attributes['idempotency.key'] !== undefined,
    );
    expect(ledger.length).toBeGreaterThan(0);
    for (const span of ledger) {
      expect(span.kind).toBe(SpanKind.SERVER);
      expect(span.attributes['idempotency.store']).toBe('ledger-idem@eu-west-1');
    }
    expect(
      spans.some((s) => s.name === 'idempotency.check' && s.resource.attributes['service.name'] === 'ledger'),
    ).toBe(false);
  });

  it('omits idempotency.store when the service does not record it', () => {
    const { spans } = simulate(scenarios.keyCollision({ requests: 100 }));
    const checks = spans.filter((s) => s.name === 'idempotency.check');
    expect(checks.length).toBeGreaterThan(0);
    expect(checks.every((s) => !('idempotency.store' in s.attributes))).toBe(true);
    expect(checks.every((s) => s.attributes['idempotency.scope'] === 'global')).toBe(true);
  });

  it('answers a colliding tenant with mismatch when the store fingerprints payloads', () => {
    const scenario = scenarios.keyCollision({ requests: 200 });
    scenario.services[0]!.dedup.fingerprintsPayload = true;
    const { spans, truth } = simulate(scenario);
    const outcomes = new Set(spans.map((s) => s.attributes['idempotency.outcome']));
    expect(outcomes.has('mismatch')).toBe(true);
    expect(outcomes.has('hit')).toBe(false);
    expect(truth.keys.length).toBeGreaterThan(0);
    expect(truth.keys.every((k) => k.class === 'key_collision')).toBe(true);
  });

  it('loses the spans of executions in flight on a failed node when configured, but not their truth', () => {
    const scenario = {
      ...scenarios.nodeFailover({ requests: 600, durationMillis: 15_000 }),
      inFlightSpansOnFailure: 'lost' as const,
    };
    const { spans, truth } = simulate(scenario);
    const ids = new Set(spans.map((s) => s.traceId + s.spanId));
    const executions = truth.keys.flatMap((k) => k.executions);
    const missing = executions.filter((e) => !ids.has(e.traceId + e.spanId));
    expect(truth.keys.length).toBeGreaterThan(0);
    expect(missing.length).toBe(truth.keys.length);
    for (const event of truth.routingEvents) {
      // Nothing the failed node was still working on at the failure reaches the pipeline.
      const late = spans.filter(
        (s) =>
          s.resource.attributes['service.instance.id'] === event.node &&
          s.endTimeUnixMillis > event.startUnixMillis &&
          s.startTimeUnixMillis < event.endUnixMillis,
      );
      expect(late).toEqual([]);
    }
  });
});

/**
 * Payments nodes whose processes are killed (`ProcessKillSpec`): what the pipeline receives of
 * them, and what the truth keeps.
 */
describe('mutation spans of killed nodes', () => {
  const killed = simulate(scenarios.nodeKill());
  const { spans, truth } = killed;
  const kills = truth.routingEvents;
  const nodeOf = (span: Span) => span.resource.attributes['service.instance.id'];

  it('loses every span its node had not exported when it was killed, and keeps the rest', () => {
    expect(kills).toHaveLength(2);
    for (const kill of kills) {
      const lastExport = kill.lastExportUnixMillis!;
      expect(kill.startUnixMillis - lastExport).toBeGreaterThanOrEqual(0);
      expect(kill.startUnixMillis - lastExport).toBeLessThan(5000);
      const before = spans.filter(
        (s) => nodeOf(s) === kill.node && s.startTimeUnixMillis < kill.startUnixMillis,
      );
      expect(before.length).toBeGreaterThan(0);
      for (const span of before) expect(span.endTimeUnixMillis).toBeLessThanOrEqual(lastExport);
      // Spans it ended in the second before its last export did reach the pipeline.
      expect(before.some((s) => s.endTimeUnixMillis > lastExport - 1000)).toBe(true);
      expect(
        spans.some(
          (s) =>
            nodeOf(s) === kill.node &&
            s.startTimeUnixMillis >= kill.startUnixMillis &&
            s.startTimeUnixMillis < kill.endUnixMillis,
        ),
      ).toBe(false);
    }
  });

  it('keeps in the truth every execution whose spans were lost, marked unseen', () => {
    const emitted = new Set(spans.map((s) => s.traceId + s.spanId));
    const executions = truth.keys.flatMap((k) => k.executions);
    expect(executions.some((e) => !e.visible)).toBe(true);
    for (const execution of executions)
      expect(emitted.has(execution.traceId + execution.spanId)).toBe(execution.visible);
    for (const key of truth.keys.filter((k) => !k.executions[0]!.visible)) {
      const kill = kills.find((k) => k.id === key.routingEventId)!;
      expect(key.executions[0]!.node).toBe(kill.node);
      expect(key.executions[1]!.visible).toBe(true);
    }
  });

  it('resets the sends in flight on the killed node, and refuses the sends that reach it until it is back', () => {
    const clients = spans.filter((s) => s.kind === SpanKind.CLIENT && keyOf(s) !== undefined);
    const errors = (type: string) => clients.filter((s) => s.attributes['error.type'] === type);
    expect(errors('ECONNRESET').length).toBeGreaterThan(0);
    expect(errors('ECONNREFUSED').length).toBeGreaterThan(0);
    for (const send of errors('ECONNRESET')) {
      // Ended as the node died, with no response and no server span under it.
      expect(kills.some((k) => Math.abs(send.endTimeUnixMillis - k.startUnixMillis) < 5)).toBe(true);
      expect(send.attributes['http.response.status_code']).toBeUndefined();
      expect(spans.some((s) => s.traceId === send.traceId && s.parentSpanId === send.spanId)).toBe(false);
    }
    for (const send of errors('ECONNREFUSED')) {
      expect(send.status.code).toBe(StatusCode.ERROR);
      expect(send.endTimeUnixMillis - send.startTimeUnixMillis).toBeLessThan(5);
      expect(send.status.message).toMatch(/^connect ECONNREFUSED /);
    }
  });

  it('answers the sends in flight on the killed node with a 502 when a proxy that does not re-send POSTs is in front, never a reset', () => {
    const behindProxy = simulate(scenarios.nodeKillBehindProxy());
    const proxied = behindProxy.spans;
    const proxiedKills = behindProxy.truth.routingEvents;
    const clients = proxied.filter((s) => s.kind === SpanKind.CLIENT && keyOf(s) !== undefined);
    expect(clients.filter((s) => s.attributes['error.type'] === 'ECONNRESET')).toEqual([]);
    const badGateways = clients.filter(
      (s) =>
        s.attributes['http.response.status_code'] === 502 &&
        !proxied.some((child) => child.traceId === s.traceId && child.parentSpanId === s.spanId),
    );
    expect(badGateways.length).toBeGreaterThan(0);
    // Each answered as a node died under it, after the proxy's own hop back.
    for (const send of badGateways)
      expect(
        proxiedKills.some(
          (k) =>
            send.endTimeUnixMillis >= k.startUnixMillis && send.endTimeUnixMillis < k.startUnixMillis + 50,
        ),
      ).toBe(true);
    // Lost executions behind it ran unseen, as without the proxy.
    expect(behindProxy.truth.keys.some((k) => !k.executions[0]!.visible && k.executions.length >= 2)).toBe(
      true,
    );
  });

  it('sends a call’s next try to another node once one refused it', () => {
    const byTrace = new Map<string, Span[]>();
    for (const span of spans) byTrace.set(span.traceId, [...(byTrace.get(span.traceId) ?? []), span]);
    let retried = 0;
    for (const send of spans.filter((s) => s.attributes['error.type'] === 'ECONNREFUSED')) {
      const refusedBy = send.attributes['network.peer.address'];
      const later = byTrace
        .get(send.traceId)!
        .filter(
          (s) =>
            s.kind === SpanKind.CLIENT &&
            s.parentSpanId === send.parentSpanId &&
            s.startTimeUnixMillis > send.startTimeUnixMillis,
        );
      for (const next of later) expect(next.attributes['network.peer.address']).not.toBe(refusedBy);
      retried += later.length;
    }
    expect(retried).toBeGreaterThan(0);
  });

  it('leaves runs without kills as they were', () => {
    const partitioned = scenarios.nodeKill();
    for (const failure of partitioned.failures) if (failure.type === 'node_down') delete failure.kill;
    const withoutKills = simulate(partitioned);
    const failover = simulate({ ...scenarios.nodeFailover(), name: partitioned.name });
    expect(withoutKills.spans).toEqual(failover.spans);
    expect(withoutKills.truth).toEqual(failover.truth);
  });
});
