import { describe, expect, it } from 'vitest';
import type { AnalyzeReport, ReportFinding } from './analyze-recording.ts';
import { scoreReport } from './score.ts';
import type { LabTruth, TruthDuplicate, TruthExecution } from './truth.ts';

function execution(node: string, visible = true, decisionVisible = visible): TruthExecution {
  return {
    node,
    traceId: '0'.repeat(32),
    spanId: `${node}-span`,
    receivedUnixMillis: 0,
    chargedUnixMillis: 0,
    visible,
    decisionSpanId: `${node}-check`,
    decisionVisible,
    handlerEndedUnixMillis: null,
    answeredUnixMillis: null,
    callerLeftUnixMillis: null,
    send: 0,
  };
}

function duplicate(
  key: string,
  options: { windowId?: string; firstVisible?: boolean; firstDecisionVisible?: boolean } = {},
): TruthDuplicate {
  const firstVisible = options.firstVisible ?? true;
  return {
    key,
    executions: [
      execution('payments-b', firstVisible, options.firstDecisionVisible ?? firstVisible),
      execution('payments-a'),
    ],
    windowId: options.windowId ?? null,
    sends: [],
  };
}

function finding(
  key: string,
  klass: string,
  event: { type: string; node: string } | null = null,
): ReportFinding {
  return { key, class: klass, cause: null, routing: { event } };
}

const truth: LabTruth = {
  scenario: 'brownout',
  description: '',
  nodes: ['payments-a', 'payments-b'],
  proxy: 'nginx',
  decisionSpan: 'child',
  storeScope: 'node',
  ttlMillis: 1000,
  clientTimeoutMillis: 2000,
  clientMaxSends: 4,
  windows: [{ id: 'brownout-1', type: 'brownout', node: 'payments-b', startUnixMillis: 0, endUnixMillis: 1 }],
  charges: 9,
  keysCharged: 5,
  duplicates: [
    duplicate('k1', { windowId: 'brownout-1' }),
    duplicate('k2', { windowId: 'brownout-1' }),
    duplicate('k3'),
    duplicate('k4', { firstVisible: false }),
    // Its SERVER span died with the node, its check reached the recording: two executions in the spans.
    duplicate('k6', { firstVisible: false, firstDecisionVisible: true }),
  ],
  lostFirstExecutions: [
    { key: 'k4', node: 'payments-b', ranAgain: true, decisionVisible: false },
    { key: 'k5', node: 'payments-b', ranAgain: false, decisionVisible: false },
    { key: 'k6', node: 'payments-b', ranAgain: true, decisionVisible: true },
  ],
};

describe('scoreReport', () => {
  const report: AnalyzeReport = {
    findings: [
      finding('k1', 'cross_store_duplicate', { type: 'latency_spike', node: 'payments-b' }),
      finding('k2', 'cross_store_duplicate', { type: 'node_down', node: 'payments-b' }),
      finding('k9', 'same_store_duplicate'),
      finding('k4', 'suspected_duplicate'),
      finding('k5', 'suspected_duplicate'),
      finding('k1', 'absorbed_duplicate'),
      finding('k6', 'cross_store_duplicate'),
    ],
  };
  const score = scoreReport(truth, report);

  it('counts a visible duplicate without a duplicate finding as missed, and a finding of a key charged once as false', () => {
    expect(score.visibleDuplicates).toBe(4);
    expect(score.found).toBe(3);
    expect(score.missedVisibleKeys).toEqual(['k3']);
    expect(score.falseKeys).toEqual(['k9']);
  });

  it('credits attribution only when the routing event has the failure type and node of the window', () => {
    expect(score.foundInWindow).toBe(2);
    expect(score.attributed).toBe(1);
    expect(score.attributionRatio).toBe(0.5);
  });

  it('measures suspected duplicates against the keys whose unseen first execution ran again, its decision unseen too', () => {
    expect(score.lostFirstExecutions).toBe(3);
    expect(score.hiddenDuplicates).toBe(1);
    expect(score.flagged).toBe(1);
    expect(score.flaggedRatio).toBe(1);
    expect(score.suspectedPrecision).toBe(0.5);
  });

  it('leaves a ratio unset when nothing could be measured', () => {
    const quiet = scoreReport({ ...truth, duplicates: [], lostFirstExecutions: [] }, { findings: [] });
    expect(quiet.attributionRatio).toBeNull();
    expect(quiet.flaggedRatio).toBeNull();
    expect(quiet.suspectedPrecision).toBeNull();
  });
});
