import type { Span } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY_HEADER, scenarios, simulate, traceIdRatioSampled } from '../src/index.ts';

const small = () => scenarios.slowTail({ requests: 400 });
const serviceOf = (span: Span) => String(span.resource.attributes['service.name']);
const idOf = (span: { traceId: string; spanId: string }) => `${span.traceId}/${span.spanId}`;

describe('head sampling', () => {
  it('decides a trace id alike wherever it is asked, and keeps about its ratio of traces', () => {
    const { spans } = simulate(small());
    const traces = [...new Set(spans.map((span) => span.traceId))];
    const kept = traces.filter((traceId) => traceIdRatioSampled(traceId, 0.1));
    expect(kept.length / traces.length).toBeGreaterThan(0.07);
    expect(kept.length / traces.length).toBeLessThan(0.13);
    expect(traces.filter((traceId) => traceIdRatioSampled(traceId, 0.1))).toEqual(kept);
    expect(traces.every((traceId) => traceIdRatioSampled(traceId, 1))).toBe(true);
    expect(traces.some((traceId) => traceIdRatioSampled(traceId, 0))).toBe(false);
  });

  it('drops whole traces when every service follows the caller, and records what it dropped', () => {
    const scenario = small();
    scenario.sampling = { ratioByService: { checkout: 0.1 } };
    const sampled = simulate(scenario);
    const all = simulate(small()).spans;
    const dropped = new Set((sampled.truth.sampledOut ?? []).map(idOf));
    expect(dropped.size).toBeGreaterThan(0.8 * all.length);
    // The same traffic, less what sampling dropped.
    expect(sampled.spans.map(idOf).sort()).toEqual(
      all
        .map(idOf)
        .filter((id) => !dropped.has(id))
        .sort(),
    );
    const keptTraces = new Set(sampled.spans.map((span) => span.traceId));
    for (const span of all) if (keptTraces.has(span.traceId)) expect(dropped.has(idOf(span))).toBe(false);
    expect(simulate(small()).truth.sampledOut).toBeUndefined();
  });

  it('keeps every keyed span of a service with the keyed-span sampler, whatever its caller decided', () => {
    const scenario = small();
    scenario.sampling = { ratioByService: { checkout: 0.1 }, keyedSpansAlways: ['payments'] };
    const { spans } = simulate(scenario);
    const all = simulate(small()).spans;
    const keyed = (span: Span) =>
      IDEMPOTENCY_KEY_HEADER in span.attributes || 'idempotency.key' in span.attributes;
    const paymentsKeyed = (list: Span[]) =>
      list.filter((span) => serviceOf(span) === 'payments' && keyed(span));
    expect(paymentsKeyed(spans).length).toBe(paymentsKeyed(all).length);
    // The caller's sends are sampled: most are gone.
    const sends = (list: Span[]) => list.filter((span) => serviceOf(span) === 'checkout' && keyed(span));
    expect(sends(spans).length).toBeLessThan(0.2 * sends(all).length);
  });

  it('starts a trace of its own for each resend when the client does, counting resends on each', () => {
    const scenario = small();
    scenario.services[0]!.client.retriesInNewTrace = true;
    const { spans } = simulate(scenario);
    const resends = spans.filter((span) => span.attributes['http.request.resend_count'] !== undefined);
    expect(resends.length).toBeGreaterThan(5);
    for (const resend of resends) {
      expect(resend.parentSpanId).toBe('');
      expect(spans.filter((span) => span.traceId === resend.traceId && span.kind === resend.kind)).toEqual([
        resend,
      ]);
    }
  });

  it('refuses a ratio outside [0, 1] and a service the scenario does not run', () => {
    const scenario = small();
    scenario.sampling = { ratioByService: { checkout: 1.5 } };
    expect(() => simulate(scenario)).toThrow(RangeError);
    scenario.sampling = { ratioByService: {}, keyedSpansAlways: ['nowhere'] };
    expect(() => simulate(scenario)).toThrow(RangeError);
  });
});
