import { decodeTraces, encodeTraces, type Span, SpanKind } from '@keyscope/otlp';
import { duplicateSome, scenarios, simulate, splitIntoPayloads } from '@keyscope/simulator';
import { describe, expect, it } from 'vitest';
import type { ServerAttempt } from '../src/attempt.ts';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping, mappingDecodeOptions } from '../src/mapping.ts';

const mapping = defaultMapping();
const run = simulate(scenarios.nodeFailover({ requests: 300 }), { seed: 7 });

/** Counted straight from the raw attributes, independently of the mapping machinery. */
function hasKey(span: Span): boolean {
  const header = span.attributes['http.request.header.idempotency-key'];
  return typeof span.attributes['idempotency.key'] === 'string' || Array.isArray(header);
}

function hasOutcome(span: Span): boolean {
  return (
    span.attributes['idempotency.outcome'] !== undefined || span.attributes['idempotency.hit'] !== undefined
  );
}

describe('attempts from a simulated node failover', () => {
  const { attempts, invalid, activity } = extractAttempts(run.spans, mapping);

  it('finds one server attempt per keyed span that records a decision', () => {
    const expected = run.spans.filter((s) => s.kind !== SpanKind.CLIENT && hasKey(s) && hasOutcome(s)).length;
    expect(expected).toBeGreaterThan(0);
    expect(attempts.filter((a) => a.kind === 'server')).toHaveLength(expected);
  });

  it('finds one client attempt per keyed CLIENT span', () => {
    const expected = run.spans.filter((s) => s.kind === SpanKind.CLIENT && hasKey(s)).length;
    expect(expected).toBeGreaterThan(0);
    expect(attempts.filter((a) => a.kind === 'client')).toHaveLength(expected);
  });

  it('finds one arrival per keyed SERVER span without a decision', () => {
    const expected = run.spans.filter(
      (s) => s.kind === SpanKind.SERVER && hasKey(s) && !hasOutcome(s),
    ).length;
    expect(attempts.filter((a) => a.kind === 'arrival')).toHaveLength(expected);
  });

  it('counts every SERVER span into node activity', () => {
    const servers = run.spans.filter((s) => s.kind === SpanKind.SERVER).length;
    expect(activity.reduce((sum, a) => sum + a.spans, 0)).toBe(servers);
  });

  it('refuses no values the simulator writes', () => {
    expect(invalid).toEqual({ outcome: 0, hit: 0, scope: 0 });
  });

  it('sees every true execution as a miss in the store ground truth names', () => {
    const bySpan = new Map(
      attempts.filter((a): a is ServerAttempt => a.kind === 'server').map((a) => [a.traceId + a.spanId, a]),
    );
    const executions = run.truth.keys.flatMap((k) => k.executions);
    expect(executions.length).toBeGreaterThan(0);
    for (const execution of executions) {
      const attempt = bySpan.get(execution.traceId + execution.spanId);
      expect(attempt?.outcome).toBe('miss');
      expect(attempt?.store).toBe(execution.store);
    }
  });

  it('gives a redelivered span the same attempt again, for the attempt log to refuse', () => {
    const redelivered = duplicateSome(run.spans, 0.2, 11);
    const bySpan = new Map(attempts.map((a) => [a.traceId + a.spanId, a]));
    let copies = 0;
    const extracted = new Set<string>();
    for (const payload of splitIntoPayloads(redelivered, 40, 12)) {
      for (const attempt of extractAttempts(payload, mapping).attempts) {
        const span = attempt.traceId + attempt.spanId;
        expect(attempt).toEqual(bySpan.get(span));
        if (extracted.has(span)) copies++;
        extracted.add(span);
      }
    }
    expect(extracted.size).toBe(attempts.length);
    expect(copies).toBeGreaterThan(0);
  });

  it('extracts the same attempts from spans decoded with the mapping decode options', () => {
    const bytes = encodeTraces(run.spans);
    const filtered = decodeTraces(bytes, mappingDecodeOptions(mapping));
    const full = decodeTraces(bytes);
    expect(extractAttempts(filtered, mapping)).toEqual(extractAttempts(full, mapping));
    expect(extractAttempts(filtered, mapping).attempts).toHaveLength(attempts.length);
  });
});
