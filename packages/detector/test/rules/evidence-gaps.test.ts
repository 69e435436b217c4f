import { describe, expect, it } from 'vitest';
import { type EvidenceAttempt, evidenceGapsOf } from '../../src/rules/evidence-gaps.ts';

const send = (spanId: string, resendCount: number, target = 'payments.internal'): EvidenceAttempt => ({
  kind: 'client',
  traceId: 't1',
  spanId,
  parentSpanId: '',
  resendCount,
  target,
});
const arrival = (spanId: string, parentSpanId: string): EvidenceAttempt => ({
  kind: 'arrival',
  traceId: 't1',
  spanId,
  parentSpanId,
});
const decision = (spanId: string, parentSpanId: string): EvidenceAttempt => ({
  kind: 'server',
  traceId: 't1',
  spanId,
  parentSpanId,
});

describe("a key's evidence gaps", () => {
  it('finds none in a key whose every send, arrival and decision is there', () => {
    expect(
      evidenceGapsOf([
        send('c0', 0),
        arrival('a0', 'c0'),
        decision('d0', 'a0'),
        send('c1', 1),
        decision('s1', 'c1'),
      ]),
    ).toEqual([]);
  });

  it('names a send with no server span under it, and an arrival with no decision', () => {
    expect(evidenceGapsOf([send('c0', 0), send('c1', 1), arrival('a1', 'c1')])).toEqual([
      {
        kind: 'send_without_server_span',
        traceId: 't1',
        spanId: 'c0',
        resendCount: 0,
        target: 'payments.internal',
      },
      { kind: 'arrival_without_decision', traceId: 't1', spanId: 'a1' },
    ]);
  });

  it('names the resend counts missing below the highest seen, per target', () => {
    const gaps = evidenceGapsOf([
      send('c2', 2),
      decision('s2', 'c2'),
      send('l0', 0, 'ledger.internal'),
      decision('t0', 'l0'),
    ]);
    expect(gaps).toEqual([{ kind: 'resend_gap', target: 'payments.internal', missing: [0, 1], seen: [2] }]);
  });

  it('does not match a server span of another trace that names the same parent span id', () => {
    const other = { ...decision('s0', 'c0'), traceId: 't2' };
    expect(evidenceGapsOf([send('c0', 0), other]).map((gap) => gap.kind)).toEqual([
      'send_without_server_span',
    ]);
  });
});
