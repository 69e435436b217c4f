import { REPLAY_HEADER_ADVICE, replayHeaderOf, type ScopeReportRow } from '@keyscope/detector';
import { describe, expect, it } from 'vitest';
import { coverageWarningsOf } from '../../src/web/page/coverage-warnings.ts';

function row(
  coverage: Partial<ScopeReportRow['coverage']>,
  replayHeader: ScopeReportRow['replayHeader'] = null,
): ScopeReportRow {
  return {
    replayHeader,
    service: 'payments',
    operation: '/payments',
    declaredScope: 'node',
    scopeFrom: 'span',
    spansSeen: true,
    declaredCounts: { node: 100 },
    keys: 100,
    keysSpanning: { nodes: 0, clusters: 0, regions: 0 },
    smallestCoveringScope: 'node',
    keysAtRisk: 0,
    status: 'sound',
    coverage: {
      keysOneIn: 1,
      arrivals: 100,
      arrivalsWithDecision: 100,
      requests: 100,
      requestsWithSend: 100,
      keys: 100,
      keysFullyVisible: 100,
      sends: 100,
      sendsWithServerSpan: 100,
      sendsWithServerSpanRatio: 1,
      arrivalsWithDecisionRatio: 1,
      requestsWithSendRatio: 1,
      keysFullyVisibleRatio: 1,
      ...coverage,
    },
  };
}

describe('the scopes page’s evidence coverage warnings', () => {
  it('says how little of a tier keyscope sees when a figure is below 90%', () => {
    expect(coverageWarningsOf(row({ arrivalsWithDecisionRatio: 0.12, keysFullyVisibleRatio: 0.5 }))).toEqual([
      "keyscope sees 12% of this tier's arrivals with their decision: sampling?",
      "keyscope sees 50% of this tier's keys with every send and decision: sampling?",
    ]);
  });

  it('says how many of the sends to a tier it sees answered', () => {
    expect(coverageWarningsOf(row({ sendsWithServerSpanRatio: 0.5 }))).toEqual([
      'keyscope sees 50% of the sends to this tier with the server span they reached: sampling?',
    ]);
  });

  it('says a tier’s replay header does not reach keyscope, with the repeats behind it and the fix', () => {
    const missing = replayHeaderOf(0, 12, 10);
    expect(coverageWarningsOf(row({}, missing))).toEqual([
      `12 repeats of a key on one node, no replay seen. ${REPLAY_HEADER_ADVICE}`,
    ]);
    expect(REPLAY_HEADER_ADVICE).toMatch(/writeHead.*setHeader.*idempotency\.outcome/);
    expect(coverageWarningsOf(row({}, replayHeaderOf(0, 9, 10)))).toEqual([]);
    expect(coverageWarningsOf(row({}, replayHeaderOf(1, 12, 10)))).toEqual([]);
  });

  it('stays quiet at 90% and above, and for figures with nothing to count', () => {
    expect(coverageWarningsOf(row({ arrivalsWithDecisionRatio: 0.9, requestsWithSendRatio: null }))).toEqual(
      [],
    );
  });
});
