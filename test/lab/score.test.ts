import { describe, expect, it } from 'vitest';
import type { AnalyzeReport, ReportFinding } from './analyze-recording.ts';
import { scoreReport } from './score.ts';
import type { LabTruth, TruthDuplicate, TruthExecution } from './truth.ts';

function execution(node: string, visible = true): TruthExecution {
  return {
    node,
    traceId: '0'.repeat(32),
    spanId: `${node}-span`,
    receivedUnixMillis: 0,
    chargedUnixMillis: 0,
    visible,
  };
}

function duplicate(key: string, options: { windowId?: string; firstVisible?: boolean } = {}): TruthDuplicate {
  return {
    key,
    executions: [execution('payments-b', options.firstVisible ?? true), execution('payments-a')],
    windowId: options.windowId ?? null,
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
  windows: [{ id: 'brownout-1', type: 'brownout', node: 'payments-b', startUnixMillis: 0, endUnixMillis: 1 }],
  charges: 9,
  keysCharged: 5,
  duplicates: [
    duplicate('k1', { windowId: 'brownout-1' }),
    duplicate('k2', { windowId: 'brownout-1' }),
    duplicate('k3'),
    duplicate('k4', { firstVisible: false }),
  ],
  lostFirstExecutions: [
    { key: 'k4', node: 'payments-b', ranAgain: true },
    { key: 'k5', node: 'payments-b', ranAgain: false },
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
    ],
  };
  const score = scoreReport(truth, report);

  it('counts a visible duplicate without a duplicate finding as missed, and a finding of a key charged once as false', () => {
    expect(score.visibleDuplicates).toBe(3);
    expect(score.found).toBe(2);
    expect(score.missedVisibleKeys).toEqual(['k3']);
    expect(score.falseKeys).toEqual(['k9']);
  });

  it('credits attribution only when the routing event has the failure type and node of the window', () => {
    expect(score.foundInWindow).toBe(2);
    expect(score.attributed).toBe(1);
    expect(score.attributionRatio).toBe(0.5);
  });

  it('measures suspected duplicates against the keys whose unseen first execution ran again', () => {
    expect(score.lostFirstExecutions).toBe(2);
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
