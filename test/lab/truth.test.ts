import { describe, expect, it } from 'vitest';
import type { LedgerRow } from './ledger.ts';
import { computeTruth, type FailureWindow } from './truth.ts';

function charge(
  key: string,
  node: string,
  receivedUnixMillis: number,
  chargedUnixMillis = receivedUnixMillis + 100,
): LedgerRow {
  return {
    key,
    node,
    traceId: '0'.repeat(32),
    spanId: `${key}-${node}-${receivedUnixMillis}`,
    receivedUnixMillis,
    chargedUnixMillis,
  };
}

const kill: FailureWindow = {
  id: 'kill-1',
  type: 'kill',
  node: 'payments-b',
  startUnixMillis: 10_000,
  endUnixMillis: 20_000,
};

function truthOf(ledger: LedgerRow[], lost: string[] = []) {
  const recorded = new Set(ledger.map((row) => row.spanId).filter((spanId) => !lost.includes(spanId)));
  return computeTruth({
    scenario: 's',
    description: '',
    nodes: ['payments-a', 'payments-b'],
    windows: [kill],
    ledger,
    recordedServerSpans: recorded,
  });
}

describe('computeTruth', () => {
  it('attributes a duplicate to the window its first execution’s node was in between the first request and the second charge', () => {
    const truth = truthOf([charge('k1', 'payments-b', 9800), charge('k1', 'payments-a', 10_500)]);
    expect(truth.duplicates).toHaveLength(1);
    expect(truth.duplicates[0]!.windowId).toBe('kill-1');
  });

  it('orders executions by arrival, so a slow first request charged after its retry is still the first', () => {
    const truth = truthOf([
      charge('k1', 'payments-a', 12_200, 12_400),
      charge('k1', 'payments-b', 11_000, 14_000),
    ]);
    expect(truth.duplicates[0]!.executions.map((e) => e.node)).toEqual(['payments-b', 'payments-a']);
    expect(truth.duplicates[0]!.windowId).toBe('kill-1');
  });

  it('names no window for a duplicate on a healthy node or outside the window', () => {
    const truth = truthOf([
      charge('k1', 'payments-a', 11_000),
      charge('k1', 'payments-b', 12_000),
      charge('k2', 'payments-b', 3000),
      charge('k2', 'payments-a', 5000),
    ]);
    expect(truth.duplicates.map((d) => d.windowId)).toEqual([null, null]);
  });

  it('lists a first execution whose SERVER span is missing, and whether the key ran again', () => {
    const ledger = [
      charge('k1', 'payments-b', 9900),
      charge('k1', 'payments-a', 11_000),
      charge('k2', 'payments-b', 9950),
    ];
    const truth = truthOf(ledger, [ledger[0]!.spanId, ledger[2]!.spanId]);
    expect(truth.lostFirstExecutions).toEqual([
      { key: 'k1', node: 'payments-b', ranAgain: true },
      { key: 'k2', node: 'payments-b', ranAgain: false },
    ]);
    expect(truth.duplicates[0]!.executions.map((e) => e.visible)).toEqual([false, true]);
    expect(truth.keysCharged).toBe(2);
    expect(truth.charges).toBe(3);
  });
});
