import type { Attempt } from '@keyscope/attempts';
import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { inferredRepeatsOf } from '../../src/coverage/replay-header.ts';
import {
  createDetector,
  type Detector,
  defaultDetectorConfig,
  REPLAY_HEADER_ADVICE,
  replayHeaderOf,
  type ScopeReportRow,
} from '../../src/index.ts';

const NO_INVALID = { outcome: 0, hit: 0, scope: 0 };

function detector(replayHeaderMinRepeats = 3): Detector {
  return createDetector({ ...defaultDetectorConfig(), coverageKeysOneIn: 1, replayHeaderMinRepeats });
}

function ingest(target: Detector, attempts: Attempt[]) {
  return target.ingest({ attempts, activity: [], invalid: NO_INVALID });
}

/**
 * A decision read from the HTTP response of a service that records no outcome, the way a
 * node-scoped store without `idempotency.scope` on its spans leaves it: the service's one unknown
 * store. `hit` only where the replay header was captured.
 */
function answered(key: string, at: number, options: { outcome?: 'miss' | 'hit'; node?: string } = {}) {
  return server({
    key,
    at,
    outcome: options.outcome ?? 'miss',
    node: options.node ?? 'payments-a',
    store: 'payments/unknown',
    scope: '',
    statusCode: 200,
    operation: 'POST /payments',
    outcomeFrom: 'http',
  });
}

/** `count` keys, each sent twice to one node a second apart, every answer read as an execution. */
function repeatedKeys(count: number, from = 0, prefix = 'k'): Attempt[] {
  return Array.from({ length: count }, (_, i) => [
    answered(`${prefix}${from + i}`, 10 * (from + i)),
    answered(`${prefix}${from + i}`, 10 * (from + i) + 1),
  ]).flat();
}

/** Makes the coverage join count what it holds: a key far later moves its watermark past them. */
function later(target: Detector, at: number) {
  ingest(target, [
    server({ key: `later-${at}`, at, operation: 'GET /health', node: 'other', service: 'probe' }),
  ]);
}

function paymentsRow(target: Detector): ScopeReportRow {
  return target.scopeReport().find((row) => row.service === 'payments')!;
}

describe('replay headers: the verdict', () => {
  it('reads captured on one replay, missing at the minimum of repeats without one, unconfirmed below it', () => {
    expect(replayHeaderOf(0, 0, 10)).toBeNull();
    expect(replayHeaderOf(1, 0, 10)).toMatchObject({ verdict: 'captured', advice: null });
    expect(replayHeaderOf(1, 50, 10)).toMatchObject({ verdict: 'captured' });
    expect(replayHeaderOf(0, 9, 10)).toMatchObject({ verdict: 'unconfirmed', advice: null });
    expect(replayHeaderOf(0, 10, 10)).toEqual({
      verdict: 'missing',
      replays: 0,
      repeats: 10,
      advice: REPLAY_HEADER_ADVICE,
    });
  });

  it('counts a repeat only in the store and on the node of an execution that had ended before it', () => {
    const first = answered('k', 0);
    expect(inferredRepeatsOf([first, answered('k', 1)])).toBe(1);
    expect(inferredRepeatsOf([first, answered('k', 1, { outcome: 'hit' })])).toBe(1);
    expect(inferredRepeatsOf([first, answered('k', 1), answered('k', 2)])).toBe(2);
    // Overlapping: a store without an in-flight lock executes it, header or not.
    expect(
      inferredRepeatsOf([first, { ...answered('k', 0), startUnixMillis: first.startUnixMillis + 50 }]),
    ).toBe(0);
    expect(inferredRepeatsOf([first, answered('k', 1, { node: 'payments-b' })])).toBe(0);
    expect(inferredRepeatsOf([first, { ...answered('k', 1), store: 'payments/node:payments-a' }])).toBe(0);
    // After a replay, not an execution: nothing that should have been replayed ran before it.
    expect(inferredRepeatsOf([answered('k', 0, { outcome: 'hit' }), answered('k', 1)])).toBe(0);
  });

  it('counts a back-to-back repeat whose whole-millisecond start, as the JS SDK stamps it, reads just before the earlier end', () => {
    // The SDK stamps a start with Date.now() and ends the span a measured duration later: the next
    // request from the same client, begun after the first was answered, can read 0.3 ms early.
    const first = { ...answered('k', 0), startUnixMillis: 1_000, endUnixMillis: 1_001.6 };
    const repeat = {
      ...answered('k', 0, { outcome: 'hit' }),
      startUnixMillis: 1_001,
      endUnixMillis: 1_001.9,
    };
    expect(inferredRepeatsOf([first, repeat])).toBe(1);
    // A start stamped with a finer clock is read as it is: that repeat overlapped.
    expect(inferredRepeatsOf([first, { ...repeat, startUnixMillis: 1_001.3 }])).toBe(0);
  });
});

describe('replay headers: the scope report', () => {
  it('reports a tier missing its replay header once its repeats on one node reach the minimum with no replay', () => {
    const target = detector(3);
    ingest(target, repeatedKeys(2));
    later(target, 200);
    expect(paymentsRow(target).replayHeader).toEqual({
      verdict: 'unconfirmed',
      replays: 0,
      repeats: 2,
      advice: null,
    });
    ingest(target, repeatedKeys(1, 30));
    later(target, 600);
    expect(paymentsRow(target).replayHeader).toMatchObject({ verdict: 'missing', repeats: 3, replays: 0 });
    expect(paymentsRow(target).replayHeader!.advice).toMatch(/writeHead/);
  });

  it('reports the header captured at a tier whose repeats show a replay, whatever their number', () => {
    const target = detector(3);
    ingest(target, [answered('r', 0), answered('r', 1, { outcome: 'hit' }), ...repeatedKeys(5, 1)]);
    later(target, 200);
    expect(paymentsRow(target).replayHeader).toMatchObject({ verdict: 'captured', replays: 1, repeats: 6 });
  });

  it('judges no replay header at a tier whose spans record their outcomes', () => {
    const target = detector(1);
    ingest(target, [
      server({ key: 'k', at: 0, store: 'A', operation: 'POST /payments' }),
      server({ key: 'k', at: 1, store: 'A', operation: 'POST /payments' }),
    ]);
    later(target, 200);
    expect(paymentsRow(target).replayHeader).toBeNull();
  });

  it('counts the same repeats and replays whatever order and batches the attempts arrive in, within the lateness', () => {
    // Within the allowed lateness (10 s) of each other, as the join's guarantee asks.
    const attempts = [
      answered('r', 0),
      answered('r', 0.5, { outcome: 'hit' }),
      ...[1, 2, 3, 4].flatMap((i) => [answered(`k${i}`, i), answered(`k${i}`, i + 0.5)]),
      answered('k2', 2.8),
      answered('k3', 3.8, { node: 'payments-b' }),
    ];
    const inOrder = detector(3);
    ingest(inOrder, attempts);
    later(inOrder, 200);
    const expected = paymentsRow(inOrder).replayHeader;
    expect(expected).toMatchObject({ verdict: 'captured', replays: 1, repeats: 6 });
    for (const seed of [1, 2, 3]) {
      const shuffled = [...attempts].sort((a, b) => hash(a.spanId, seed) - hash(b.spanId, seed));
      const target = detector(3);
      for (let i = 0; i < shuffled.length; i += 3) ingest(target, shuffled.slice(i, i + 3));
      later(target, 200);
      expect(paymentsRow(target).replayHeader).toEqual(expected);
    }
  });

  it('keeps the counts through its persisted state', () => {
    const target = detector(3);
    ingest(target, repeatedKeys(3));
    later(target, 200);
    const restored = detector(3);
    restored.restore({ findings: [], scopeState: target.scopeState() });
    expect(paymentsRow(restored).replayHeader).toMatchObject({ verdict: 'missing', repeats: 3 });
  });
});

describe('replay headers: severity', () => {
  it('makes a repeat on one node judged only from HTTP a high finding, not critical, saying why, at a tier with no replay', () => {
    const target = detector();
    const changes = ingest(target, repeatedKeys(1));
    const [finding] = target.findings();
    expect(finding).toMatchObject({
      class: 'same_store_duplicate',
      cause: 'ttl_expired',
      severity: 'high',
      severityReason: 'replay_unseen',
    });
    const [incident] = target.incidents();
    expect(incident).toMatchObject({ severity: 'high', severityReason: 'replay_unseen' });
    expect(incident!.title).toMatch(/no replay seen at this tier/);
    expect(incident!.advice).toMatch(/writeHead/);
    expect(changes.incidents.map((i) => i.severity)).toEqual(['high']);
  });

  it('keeps a repeat critical at a tier that has shown a replay', () => {
    const target = detector();
    ingest(target, [answered('r', 0), answered('r', 1, { outcome: 'hit' })]);
    ingest(target, repeatedKeys(1, 1));
    const [finding] = target.findings();
    expect(finding).toMatchObject({ class: 'same_store_duplicate', severity: 'critical' });
    expect(finding).not.toHaveProperty('severityReason');
    expect(target.incidents().map((i) => i.severity)).toEqual(['critical']);
  });

  it('judges a doubted repeat again, critical, once its tier shows a replay', () => {
    const target = detector();
    ingest(target, repeatedKeys(1));
    const doubted = target.incidents()[0]!;
    const changes = ingest(target, [answered('r', 100), answered('r', 101, { outcome: 'hit' })]);
    expect(target.findings()).toMatchObject([{ key: 'k0', severity: 'critical' }]);
    expect(target.incidents().map((i) => i.severity)).toEqual(['critical']);
    expect(changes.retractedIncidentIds).toEqual([doubted.id]);
    expect(changes.findings.map((f) => f.severity)).toEqual(['critical']);
  });

  it('keeps critical what a lost replay header does not explain: recorded outcomes, or executions on two nodes', () => {
    const recorded = detector();
    ingest(recorded, [
      server({ key: 'k', at: 0, store: 'A', operation: 'POST /payments' }),
      server({ key: 'k', at: 1, store: 'A', operation: 'POST /payments' }),
    ]);
    expect(recorded.findings().map((f) => f.severity)).toEqual(['critical']);

    const twoNodes = detector();
    ingest(twoNodes, [answered('k', 0), answered('k', 1, { node: 'payments-b' })]);
    expect(twoNodes.findings()).toMatchObject([{ cause: 'store_unknown', severity: 'critical' }]);
  });
});

/** A deterministic shuffle key. */
function hash(text: string, seed: number): number {
  let h = seed * 0x9e3779b1;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
