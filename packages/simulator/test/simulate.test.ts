import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY_HEADER, scenarios, simulate, simulateBatches } from '../src/index.ts';

const small = () => scenarios.nodeFailover({ requests: 200, durationMillis: 20_000 });

function carriesKey(attributes: Record<string, unknown>): boolean {
  return IDEMPOTENCY_KEY_HEADER in attributes || 'idempotency.key' in attributes;
}

describe('simulate', () => {
  it('produces identical spans and truth for the same seed', () => {
    const a = simulate(small(), { seed: 5 });
    const b = simulate(small(), { seed: 5 });
    expect(b.spans).toEqual(a.spans);
    expect(b.truth).toEqual(a.truth);
  });

  it('produces different spans and truth for different seeds', () => {
    const a = simulate(small(), { seed: 5 });
    const b = simulate(small(), { seed: 6 });
    expect(b.spans[0]!.traceId).not.toBe(a.spans[0]!.traceId);
    expect(b.truth.keys.map((k) => k.key)).not.toEqual(a.truth.keys.map((k) => k.key));
  });

  it('keeps failures in place across seeds when the scenario fixes failureSeed', () => {
    const scenario = { ...small(), failureSeed: 99 };
    expect(simulate(scenario, { seed: 1 }).truth.routingEvents).toEqual(
      simulate(scenario, { seed: 2 }).truth.routingEvents,
    );
  });

  it('returns spans in non-decreasing start time, all inside the run', () => {
    const { spans } = simulate(small());
    const start = small().startUnixMillis;
    for (let i = 1; i < spans.length; i++) {
      expect(spans[i]!.startTimeUnixMillis).toBeGreaterThanOrEqual(spans[i - 1]!.startTimeUnixMillis);
    }
    expect(spans[0]!.startTimeUnixMillis).toBeGreaterThanOrEqual(start);
    expect(spans.every((s) => s.endTimeUnixMillis >= s.startTimeUnixMillis)).toBe(true);
  });

  it('keeps about 80% of spans free of idempotency keys', () => {
    const { spans } = simulate(scenarios.slowTail());
    const keyed = spans.filter((s) => carriesKey(s.attributes)).length;
    expect(keyed / spans.length).toBeGreaterThan(0.18);
    expect(keyed / spans.length).toBeLessThan(0.22);
  });

  it('follows a configured share of non-mutation spans', () => {
    const { spans } = simulate({ ...scenarios.slowTail({ requests: 200 }), nonMutationSpanFraction: 0.5 });
    const keyed = spans.filter((s) => carriesKey(s.attributes)).length;
    expect(keyed / spans.length).toBeGreaterThan(0.45);
    expect(keyed / spans.length).toBeLessThan(0.55);
  });

  it('rejects a brownout that slows nothing', () => {
    const scenario = small();
    scenario.failures = [
      {
        type: 'brownout',
        service: 'payments',
        startOffsetMillis: 0,
        durationMillis: 1000,
        slowdownMillis: 0,
      },
    ];
    expect(() => simulate(scenario)).toThrow(RangeError);
  });

  it('rejects a scenario whose failure names an unknown service', () => {
    const scenario = small();
    scenario.failures = [
      { type: 'node_down', service: 'billing', startOffsetMillis: 0, durationMillis: 1000 },
    ];
    expect(() => simulate(scenario)).toThrow(RangeError);
  });
});

describe('simulateBatches', () => {
  it('yields the same spans as simulate, in batches of at most batchSize', () => {
    const whole = simulate(small(), { seed: 3 });
    const run = simulateBatches(small(), { seed: 3, batchSize: 500 });
    const batches = [...run.batches];
    expect(batches.slice(0, -1).every((b) => b.length === 500)).toBe(true);
    expect(batches.flat()).toEqual(whole.spans);
    expect(run.truth()).toEqual(whole.truth);
  });

  it('computes the truth on its own when asked before iterating', () => {
    const run = simulateBatches(small(), { seed: 3 });
    expect(run.truth()).toEqual(simulate(small(), { seed: 3 }).truth);
  });

  it('yields exactly the benchmark span count in time order with bounded buffering', () => {
    const spans = 200_000;
    const run = simulateBatches(scenarios.benchmark({ spans }), { batchSize: 2000 });
    let count = 0;
    let keyed = 0;
    let last = Number.NEGATIVE_INFINITY;
    let ordered = true;
    for (const batch of run.batches) {
      count += batch.length;
      for (const span of batch) {
        if (span.startTimeUnixMillis < last) ordered = false;
        last = span.startTimeUnixMillis;
        if (carriesKey(span.attributes)) keyed++;
      }
    }
    expect(count).toBe(spans);
    expect(ordered).toBe(true);
    expect(keyed / count).toBeGreaterThan(0.18);
    expect(keyed / count).toBeLessThan(0.22);
    // A few simulated seconds of traffic at most, not the run.
    expect(run.peakBufferedSpans()).toBeLessThan(spans / 50);
    expect(run.truth().keys.length).toBeGreaterThan(0);
  });

  it('starts yielding a hundred-million-span run without generating it first', () => {
    const run = simulateBatches(scenarios.benchmark({ spans: 100_000_000 }), { batchSize: 1000 });
    const iterator = run.batches[Symbol.iterator]();
    for (let i = 0; i < 5; i++) expect(iterator.next().value).toHaveLength(1000);
    expect(run.peakBufferedSpans()).toBeGreaterThan(0);
    expect(run.peakBufferedSpans()).toBeLessThan(5000);
  });
});
