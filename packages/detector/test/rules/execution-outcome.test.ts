import type { Attempt, ExtractedAttempts, ServerAttempt } from '@keyscope/attempts';
import { arrival, effect, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { createDetector, type Detector } from '../../src/index.ts';
import { executionOutcomes } from '../../src/rules/execution-outcome.ts';

function batch(attempts: Attempt[]): ExtractedAttempts {
  return { attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } };
}

function run(...batches: Attempt[][]): Detector {
  const detector = createDetector();
  for (const attempts of batches) detector.ingest(batch(attempts));
  detector.flush();
  return detector;
}

function only<T>(items: T[]): T {
  expect(items).toHaveLength(1);
  return items[0]!;
}

/**
 * One payment the way a proxy re-sends it on 503: node a admits it (decision on an INTERNAL child
 * of the SERVER span), its request fails, and node b runs it once. Trace `…0001`; node a's SERVER
 * span `…00a1`, its decision `…00a2`; node b's `…00b1` and `…00b2`.
 */
function resentAfterFailure(
  first: { effect?: '' | 'committed' | 'none' | 'unknown'; released?: boolean; statusCode?: number } = {},
  options: { effectSpansDeclared?: boolean } = {},
): Attempt[] {
  const traceId = '0'.repeat(31) + '1';
  const declared = options.effectSpansDeclared ?? false;
  return [
    arrival({
      key: 'k1',
      node: 'a',
      traceId,
      spanId: '00000000000000a1',
      at: 0,
      durationMillis: 40,
      statusCode: first.statusCode ?? 503,
      effect: first.effect ?? '',
      released: first.released ?? true,
    }),
    server({
      key: 'k1',
      node: 'a',
      store: 'payments/node:a',
      traceId,
      spanId: '00000000000000a2',
      parentSpanId: '00000000000000a1',
      at: 0.001,
      durationMillis: 2,
      effectSpansDeclared: declared,
    }),
    arrival({ key: 'k1', node: 'b', traceId, spanId: '00000000000000b1', at: 0.06, statusCode: 201 }),
    server({
      key: 'k1',
      node: 'b',
      store: 'payments/node:b',
      traceId,
      spanId: '00000000000000b2',
      parentSpanId: '00000000000000b1',
      at: 0.061,
      durationMillis: 2,
      effectSpansDeclared: declared,
    }),
  ];
}

const TRACE = '0'.repeat(31) + '1';

describe('an admitted attempt that failed', () => {
  it('is no execution when its request says its effect did not commit: a scope violation, not a duplicate', () => {
    const detector = run(resentAfterFailure({ effect: 'none' }));
    const finding = only(detector.findings());
    expect(finding.class).toBe('scope_violation');
    expect(finding.severity).toBe('warning');
    expect(finding.executions).toBe(1);
    expect(finding.stores).toEqual(['payments/node:a', 'payments/node:b']);
    expect(detector.incidents().map((i) => i.severity)).toEqual(['warning']);
  });

  it('is an execution when its request says its effect committed: a confirmed duplicate', () => {
    const finding = only(run(resentAfterFailure({ effect: 'committed', statusCode: 500 })).findings());
    expect(finding.class).toBe('cross_store_duplicate');
    expect(finding.severity).toBe('critical');
    expect(finding.executions).toBe(2);
  });

  it('is a suspected duplicate, high and not critical, when nothing says whether its effect committed', () => {
    const detector = run(resentAfterFailure());
    const finding = only(detector.findings());
    expect(finding.class).toBe('suspected_duplicate');
    expect(finding.cause).toBe('effect_unknown');
    expect(finding.severity).toBe('high');
    expect(finding.executions).toBe(2);
    const incident = only(detector.incidents());
    expect(incident.severity).toBe('high');
    expect(incident.advice).toContain(
      'The first attempt failed after admission; whether its effect committed is unknown',
    );
    expect(incident.advice).toContain('idempotency.effect');
    expect(incident.advice).toContain('sideEffectSpans');
  });

  it('names the failed admission a suspected duplicate rests on', () => {
    const finding = only(run(resentAfterFailure()).findings());
    expect(finding.suspicion).toEqual({
      strength: 'moderate',
      evidence: [
        {
          kind: 'failed_after_admission',
          strength: 'moderate',
          traceId: TRACE,
          spanId: '00000000000000a2',
          atUnixMillis: finding.attempts.find((a) => a.spanId === '00000000000000a2')!.startUnixMillis,
          node: 'a',
          store: 'payments/node:a',
          routingEventId: null,
        },
      ],
    });
  });

  it('is a confirmed duplicate when two other attempts executed, whatever the failed one did', () => {
    const attempts = resentAfterFailure();
    attempts.push(server({ key: 'k1', node: 'c', store: 'payments/node:c', at: 5 }));
    const finding = only(run(attempts).findings());
    expect(finding.class).toBe('cross_store_duplicate');
    expect(finding.executions).toBe(2);
  });

  it('reads `unknown` stated by the service as no evidence either way', () => {
    expect(only(run(resentAfterFailure({ effect: 'unknown' })).findings()).class).toBe('suspected_duplicate');
  });

  it('counts as failed when only the key’s release says so', () => {
    const finding = only(run(resentAfterFailure({ statusCode: 201, released: true })).findings());
    expect(finding.class).toBe('suspected_duplicate');
  });

  it('stays an execution when its request succeeded, whatever its effect attribute says', () => {
    const finding = only(
      run(resentAfterFailure({ statusCode: 201, released: false, effect: 'none' })).findings(),
    );
    expect(finding.class).toBe('cross_store_duplicate');
  });

  it('keeps a same-store repeat after a release before the effect out of the findings', () => {
    const attempts = resentAfterFailure({ effect: 'none' }).map((a) =>
      a.kind === 'server' ? { ...a, store: 'payments/cluster:c1' } : a,
    );
    expect(run(attempts).findings()).toEqual([]);
  });
});

describe('side-effect spans', () => {
  it('confirm a duplicate when one succeeded under the failed attempt', () => {
    const attempts = resentAfterFailure({}, { effectSpansDeclared: true });
    attempts.push(
      effect({ key: 'k1', node: 'a', traceId: TRACE, parentSpanId: '00000000000000a2', at: 0.01 }),
    );
    expect(only(run(attempts).findings()).class).toBe('cross_store_duplicate');
  });

  it('say the effect did not commit when none ran under the failed attempt, whatever ran under the retry', () => {
    const attempts = resentAfterFailure({ effect: 'unknown' }, { effectSpansDeclared: true });
    attempts.push(
      effect({ key: 'k1', node: 'b', traceId: TRACE, parentSpanId: '00000000000000b2', at: 0.07 }),
    );
    expect(only(run(attempts).findings()).class).toBe('scope_violation');
  });

  it('leave the effect unknown when the one under the failed attempt failed itself', () => {
    const attempts = resentAfterFailure({}, { effectSpansDeclared: true });
    attempts.push(
      effect({
        key: 'k1',
        node: 'a',
        traceId: TRACE,
        parentSpanId: '00000000000000a1',
        at: 0.01,
        failed: true,
      }),
    );
    expect(only(run(attempts).findings()).class).toBe('suspected_duplicate');
  });

  it('are linked through a parent that carries no key by node, trace and the request’s time', () => {
    const attempts = resentAfterFailure({}, { effectSpansDeclared: true });
    const under = effect({
      key: 'k1',
      node: 'a',
      traceId: TRACE,
      parentSpanId: '00000000000000ff',
      at: 0.02,
    });
    expect(executionOutcomes([...attempts, under])(attempts[1] as ServerAttempt)).toBe('executed');
    // The same span on another node, or after the request ended, is not under it.
    const elsewhere = { ...under, placement: { ...under.placement, node: 'b' } };
    expect(executionOutcomes([...attempts, elsewhere])(attempts[1] as ServerAttempt)).toBe('not_executed');
    const later = effect({ key: 'k1', node: 'a', traceId: TRACE, parentSpanId: '00000000000000ff', at: 0.5 });
    expect(executionOutcomes([...attempts, later])(attempts[1] as ServerAttempt)).toBe('not_executed');
  });

  it('arriving after the judgement turn a scope violation into a confirmed duplicate', () => {
    const attempts = resentAfterFailure({}, { effectSpansDeclared: true });
    const detector = createDetector();
    detector.ingest(batch(attempts));
    expect(detector.findings().map((f) => f.class)).toEqual(['scope_violation']);
    const late = detector.ingest(
      batch([effect({ key: 'k1', node: 'a', traceId: TRACE, parentSpanId: '00000000000000a2', at: 0.01 })]),
    );
    expect(late.findings.map((f) => f.class)).toEqual(['cross_store_duplicate']);
    expect(late.retractedFindingIds).toHaveLength(1);
    expect(detector.findings().map((f) => f.class)).toEqual(['cross_store_duplicate']);
  });

  it('land at no tier: they add no row to the scope report', () => {
    const attempts = resentAfterFailure({}, { effectSpansDeclared: true });
    attempts.push(
      effect({ key: 'k1', node: 'a', traceId: TRACE, parentSpanId: '00000000000000a2', at: 0.01 }),
    );
    const rows = run(attempts).scopeReport();
    expect(rows.map((r) => r.operation)).toEqual(['/payments']);
    expect(rows[0]!.keysAtRisk).toBe(1);
  });
});

describe('the scope report', () => {
  it('counts a key whose failed first attempt was re-sent to another store as at risk', () => {
    const rows = run(resentAfterFailure({ effect: 'none' })).scopeReport();
    expect(rows).toMatchObject([{ operation: '/payments', keys: 1, keysAtRisk: 1, status: 'narrower' }]);
  });
});
