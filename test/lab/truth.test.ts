import { describe, expect, it } from 'vitest';
import type { ClientSend } from './checkout-traffic.ts';
import type { LedgerAnswer, LedgerRow } from './ledger.ts';
import { computeTruth, type FailureWindow, type TruthSetup } from './truth.ts';

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

const setup: TruthSetup = {
  proxy: 'haproxy',
  decisionSpan: 'child',
  storeScope: 'cluster',
  ttlMillis: 500,
  clientTimeoutMillis: 1500,
  clientMaxSends: 5,
};

function truthOf(
  ledger: LedgerRow[],
  lost: string[] = [],
  more: {
    answers?: LedgerAnswer[];
    sends?: ClientSend[];
    lostDecisions?: string[];
  } = {},
) {
  const recorded = new Set(ledger.map((row) => row.spanId).filter((spanId) => !lost.includes(spanId)));
  const decisions = new Set(
    ledger
      .map((row) => row.decisionSpanId ?? row.spanId)
      .filter((spanId) => !(more.lostDecisions ?? lost).includes(spanId)),
  );
  return computeTruth({
    scenario: 's',
    description: '',
    nodes: ['payments-a', 'payments-b'],
    setup,
    windows: [kill],
    ledger,
    answers: more.answers ?? [],
    sends: more.sends ?? [],
    recordedServerSpans: recorded,
    recordedDecisionSpans: decisions,
  });
}

function sent(key: string, send: number, startUnixMillis: number, result: ClientSend['result']): ClientSend {
  return { key, send, startUnixMillis, endUnixMillis: startUnixMillis + 50, result };
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
      { key: 'k1', node: 'payments-b', ranAgain: true, decisionVisible: false },
      { key: 'k2', node: 'payments-b', ranAgain: false, decisionVisible: false },
    ]);
    expect(truth.duplicates[0]!.executions.map((e) => e.visible)).toEqual([false, true]);
    expect(truth.keysCharged).toBe(2);
    expect(truth.charges).toBe(3);
  });

  it('says the decision of an execution is visible when its check span is in the recording, whatever became of the SERVER span', () => {
    const ledger = [
      { ...charge('k1', 'payments-b', 9900), decisionSpanId: 'check-1' },
      { ...charge('k1', 'payments-a', 11_000), decisionSpanId: 'check-2' },
    ];
    const truth = truthOf(ledger, [ledger[0]!.spanId], { lostDecisions: [] });
    expect(
      truth.duplicates[0]!.executions.map((e) => [e.visible, e.decisionSpanId, e.decisionVisible]),
    ).toEqual([
      [false, 'check-1', true],
      [true, 'check-2', true],
    ]);
    expect(truth.lostFirstExecutions).toEqual([
      { key: 'k1', node: 'payments-b', ranAgain: true, decisionVisible: true },
    ]);
  });

  it('joins how each execution ended: answered, its caller gone first, or never (killed before its handler ended)', () => {
    const ledger = [
      charge('k1', 'payments-b', 9900),
      charge('k1', 'payments-a', 11_000),
      charge('k1', 'payments-a', 13_000),
    ];
    const answers: LedgerAnswer[] = [
      {
        key: 'k1',
        spanId: ledger[1]!.spanId,
        handlerEndedUnixMillis: 11_400,
        answeredUnixMillis: null,
        callerLeftUnixMillis: 11_200,
      },
      {
        key: 'k1',
        spanId: ledger[2]!.spanId,
        handlerEndedUnixMillis: 13_300,
        answeredUnixMillis: 13_301,
        callerLeftUnixMillis: null,
      },
    ];
    const [killed, left, answered] = truthOf(ledger, [], { answers }).duplicates[0]!.executions;
    expect([
      killed!.handlerEndedUnixMillis,
      killed!.answeredUnixMillis,
      killed!.callerLeftUnixMillis,
    ]).toEqual([null, null, null]);
    expect([left!.handlerEndedUnixMillis, left!.answeredUnixMillis, left!.callerLeftUnixMillis]).toEqual([
      11_400,
      null,
      11_200,
    ]);
    expect([answered!.answeredUnixMillis, answered!.callerLeftUnixMillis]).toEqual([13_301, null]);
  });

  it('gives each duplicate the client’s sends of its key, and each execution the send it served', () => {
    const ledger = [charge('k1', 'payments-b', 9900), charge('k1', 'payments-a', 12_100)];
    const sends = [
      sent('k1', 1, 11_500, 502),
      sent('k1', 0, 9890, 'timeout'),
      sent('k1', 2, 12_090, 201),
      sent('k2', 0, 9000, 201),
    ];
    const truth = truthOf(ledger, [], {
      sends: [...sends, { ...sent('k1', 3, 12_500, 'error'), errorCode: 'ECONNRESET' }],
    });
    const [duplicate] = truth.duplicates;
    expect(duplicate!.sends!.map((s) => [s.send, s.result])).toEqual([
      [0, 'timeout'],
      [1, 502],
      [2, 201],
      [3, 'error'],
    ]);
    expect(duplicate!.sends![3]).toMatchObject({ errorCode: 'ECONNRESET' });
    expect(duplicate!.sends![0]).not.toHaveProperty('key');
    expect(duplicate!.executions.map((e) => e.send)).toEqual([0, 2]);
  });

  it('says how the scenario was set up: proxy, decision span, store scope, TTL and the client’s timeout', () => {
    const truth = truthOf([charge('k1', 'payments-a', 1000)]);
    expect(truth).toMatchObject({
      proxy: 'haproxy',
      decisionSpan: 'child',
      storeScope: 'cluster',
      ttlMillis: 500,
      clientTimeoutMillis: 1500,
      clientMaxSends: 5,
    });
  });
});
