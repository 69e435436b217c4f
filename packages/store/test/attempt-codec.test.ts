import type { Attempt, Placement } from '@keyscope/attempts';
import { arrival, client, effect, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import {
  ARRIVAL,
  CLIENT,
  EFFECT,
  ENTRY,
  KINDS,
  type PlacementIds,
  readAttempts,
  SEGMENT,
  SERVER,
  writeAttempts,
} from '../src/attempt-codec.ts';
import { JsonBytes } from '../src/json-bytes.ts';

/** Placements by id in the order first seen, as the placements table hands them out (from 1). */
function placementIds(): PlacementIds {
  const byId: Placement[] = [];
  return {
    idOf(placement) {
      const known = byId.findIndex((p) => JSON.stringify(p) === JSON.stringify(placement));
      if (known !== -1) return known + 1;
      byId.push(placement);
      return byId.length;
    },
    placement: (id) => byId[id - 1]!,
  };
}

/** The JSON text of one partition key's segment of `attempts`. */
function encoded(attempts: Attempt[], placements = placementIds()): string {
  const out = new JsonBytes(64);
  writeAttempts(out, attempts, placements);
  return out.bytes().toString('utf8');
}

const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
const retry = '4bf92f3577b34da6a3ce929d0e0e4737';
const attempts: Attempt[] = [
  server({
    key: 'k1',
    traceId: trace,
    node: 'a',
    store: 'A',
    tenant: 't1',
    outcome: 'miss',
    scope: 'cluster',
    statusCode: 503,
    failed: true,
    effect: 'none',
    released: true,
    effectSpansDeclared: true,
    parentSpanId: '00f067aa0ba902b7',
  }),
  client({
    key: 'k1',
    traceId: trace,
    resendCount: 2,
    target: 'payments:8080',
    statusCode: 502,
    error: 'reset',
  }),
  arrival({ key: 'k1', traceId: retry, node: 'b', statusCode: 500, failed: true, effect: 'committed' }),
  effect({ key: 'k1', traceId: retry, node: 'b', failed: true }),
];

describe('the attempt codec', () => {
  it('writes every field at the position the codec names for it', () => {
    const segment = JSON.parse(encoded(attempts)) as unknown[];
    expect(segment[SEGMENT.key]).toBe('k1');
    expect(segment[SEGMENT.baseStartUnixMillis]).toBe(attempts[0]!.startUnixMillis);
    const entries = segment.slice(SEGMENT.firstEntry) as unknown[][];
    expect(entries).toHaveLength(attempts.length);
    for (const [i, a] of attempts.entries()) {
      const entry = entries[i]!;
      expect(KINDS[entry[ENTRY.kind] as number]).toBe(a.kind);
      expect([
        entry[ENTRY.spanId],
        entry[ENTRY.tenant],
        entry[ENTRY.parentSpanId],
        entry[ENTRY.operation],
      ]).toEqual([a.spanId, a.tenant, a.parentSpanId, a.operation]);
      expect((segment[SEGMENT.baseStartUnixMillis] as number) + (entry[ENTRY.start] as number)).toBe(
        a.startUnixMillis,
      );
      expect(a.startUnixMillis + (entry[ENTRY.end] as number)).toBe(a.endUnixMillis);
    }
    // The trace id once while the entries after it share it; placements by id, a and b.
    expect(entries.map((entry) => entry[ENTRY.traceId])).toEqual([trace, 0, retry, 0]);
    expect(entries.map((entry) => entry[ENTRY.placementId])).toEqual([1, 2, 3, 3]);
    const [onServer, onClient, onArrival, onEffect] = entries as [unknown[], unknown[], unknown[], unknown[]];
    expect([onServer[SERVER.outcome], onServer[SERVER.store], onServer[SERVER.scope]]).toEqual([
      'miss',
      'A',
      'cluster',
    ]);
    expect([onServer[SERVER.result], onServer[SERVER.effect]]).toEqual([503 * 8 + 4 + 2 + 1, 'none']);
    expect([
      onClient[CLIENT.resendCount],
      onClient[CLIENT.target],
      onClient[CLIENT.statusCode],
      onClient[CLIENT.error],
    ]).toEqual([2, 'payments:8080', 502, 'reset']);
    expect([onArrival[ARRIVAL.result], onArrival[ARRIVAL.effect]]).toEqual([500 * 8 + 4, 'committed']);
    expect(onEffect[EFFECT.failed]).toBe(1);
  });

  it('reads back every kind whole, properties in the order the extractor creates them', () => {
    const placements = placementIds();
    const read = readAttempts(encoded(attempts, placements), placements);
    expect(read).toEqual(attempts);
    expect(read.map((a) => Object.keys(a))).toEqual(attempts.map((a) => Object.keys(a)));
  });

  it('marks a send linked to its key by its server span, and reads the mark back', () => {
    const placements = placementIds();
    const sends = [
      client({ key: 'k3', spanId: '00000000000000c1', statusCode: 0, error: 'timeout', keyFrom: 'child' }),
      client({ key: 'k3', spanId: '00000000000000c2' }),
    ];
    const text = encoded(sends, placements);
    const entries = (JSON.parse(text) as unknown[]).slice(SEGMENT.firstEntry) as unknown[][];
    expect(entries.map((entry) => entry[CLIENT.keyFrom])).toEqual([1, undefined]);
    const read = readAttempts(text, placements);
    expect(read).toStrictEqual(sends);
    expect(read.map((a) => Object.keys(a))).toEqual(sends.map((a) => Object.keys(a)));
  });

  it('marks an outcome inferred from the HTTP response, and reads the mark back', () => {
    const placements = placementIds();
    const decisions = [
      server({ key: 'k4', spanId: '00000000000000d1', scope: '', statusCode: 200, outcomeFrom: 'http' }),
      server({ key: 'k4', spanId: '00000000000000d2', outcome: 'hit' }),
    ];
    const text = encoded(decisions, placements);
    const entries = (JSON.parse(text) as unknown[]).slice(SEGMENT.firstEntry) as unknown[][];
    // outcomeFrom is a field of the attempt table past the stored layout: appended after its last slot.
    const outcomeFrom = SERVER.businessId + 1;
    expect(entries.map((entry) => entry[outcomeFrom])).toEqual([1, undefined]);
    const read = readAttempts(text, placements);
    expect(read).toStrictEqual(decisions);
    expect(read.map((a) => Object.keys(a))).toEqual(decisions.map((a) => Object.keys(a)));
  });

  it('appends to the attempts it is given, and writes a request that succeeded silently without its result', () => {
    const placements = placementIds();
    const silent = [server({ key: 'k2', node: 'a' }), arrival({ key: 'k2', node: 'a' })];
    const text = encoded(silent, placements);
    const entries = (JSON.parse(text) as unknown[]).slice(SEGMENT.firstEntry) as unknown[][];
    expect(entries.map((entry) => entry.length)).toEqual([SERVER.result, ARRIVAL.result]);
    const into = [attempts[3]!];
    expect(readAttempts(text, placements, into)).toBe(into);
    expect(into).toEqual([attempts[3], ...silent]);
  });

  it('keeps the business id of server attempts and arrivals, with or without a stated effect', () => {
    const placements = placementIds();
    const named = [
      server({ key: 'k3', node: 'a', businessId: 'pay_1' }),
      server({ key: 'k3', node: 'a', effect: 'committed', businessId: 'pay_2' }),
      arrival({ key: 'k3', node: 'a', businessId: 'pay_3' }),
    ];
    const text = encoded(named, placements);
    const entries = (JSON.parse(text) as unknown[]).slice(SEGMENT.firstEntry) as unknown[][];
    expect(entries.map((entry, i) => entry[i < 2 ? SERVER.businessId : ARRIVAL.businessId])).toEqual([
      'pay_1',
      'pay_2',
      'pay_3',
    ]);
    const read = readAttempts(text, placements);
    expect(read).toEqual(named);
    expect(read.map((a) => Object.keys(a))).toEqual(named.map((a) => Object.keys(a)));
  });
});
