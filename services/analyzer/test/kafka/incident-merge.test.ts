import type { Attempt } from '@keyscope/attempts';
import { createDetector, defaultDetectorConfig, type Incident } from '@keyscope/detector';
import { client, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { mergeIncidentParts } from '../../src/kafka/incident-merge.ts';

function part(overrides: Partial<Incident>): Incident {
  const keys = overrides.keys ?? 1;
  return {
    id: 'inc_1',
    service: 'payments',
    operation: '/payments',
    class: 'cross_store_duplicate',
    severity: 'critical',
    status: 'open',
    routingEvent: null,
    bucketStartUnixMillis: 0,
    keys,
    settled: true,
    stores: [],
    nodes: [],
    storesTotal: overrides.stores?.length ?? 0,
    nodesTotal: overrides.nodes?.length ?? 0,
    openedUnixMillis: 1_000,
    lastFindingUnixMillis: 2_000,
    resolvedUnixMillis: null,
    title: `payments /payments: ${keys === 1 ? '1 key' : `${keys} keys`} executed twice in different dedup stores`,
    advice: `advice from ${keys}`,
    ...overrides,
  };
}

describe('an incident reported by several attempts partitions', () => {
  it('adds up keys, unites stores and nodes, spans the parts in time', () => {
    const merged = mergeIncidentParts(
      [
        part({
          keys: 2,
          stores: ['s/a', 's/b'],
          nodes: ['a', 'b'],
          openedUnixMillis: 5_000,
          lastFindingUnixMillis: 9_000,
        }),
        part({
          keys: 3,
          stores: ['s/b', 's/c'],
          nodes: ['b', 'c'],
          openedUnixMillis: 4_000,
          lastFindingUnixMillis: 7_000,
        }),
      ],
      1_000,
    );
    expect(merged).toMatchObject({
      keys: 5,
      stores: ['s/a', 's/b', 's/c'],
      nodes: ['a', 'b', 'c'],
      storesTotal: 3,
      nodesTotal: 3,
      openedUnixMillis: 4_000,
      lastFindingUnixMillis: 9_000,
      status: 'open',
      title: 'payments /payments: 5 keys executed twice in different dedup stores',
      advice: 'advice from 3',
    });
  });

  it('lists at most the cap of the united stores and nodes, and counts at least each part counted', () => {
    const merged = mergeIncidentParts(
      [
        part({ stores: ['s/a', 's/b'], storesTotal: 40, nodes: ['a', 'b'], nodesTotal: 2 }),
        part({ stores: ['s/c', 's/d'], storesTotal: 2, nodes: ['c', 'd'], nodesTotal: 2 }),
      ],
      3,
    );
    expect(merged).toMatchObject({
      stores: ['s/a', 's/b', 's/c'],
      storesTotal: 40,
      nodes: ['a', 'b', 'c'],
      nodesTotal: 4,
    });
  });

  it('is open while any part is, resolved when all are', () => {
    const resolved = (at: number) => part({ status: 'resolved', resolvedUnixMillis: at });
    expect(mergeIncidentParts([resolved(10), part({})], 1_000)).toMatchObject({
      status: 'open',
      resolvedUnixMillis: null,
    });
    expect(mergeIncidentParts([resolved(10), resolved(30)], 1_000)).toMatchObject({
      status: 'resolved',
      resolvedUnixMillis: 30,
    });
  });

  it('is settled once any part is, so a partition whose keys were attributed lets it page', () => {
    const waiting = part({ settled: false });
    expect(mergeIncidentParts([waiting, part({ settled: false })], 1_000).settled).toBe(false);
    expect(mergeIncidentParts([waiting, part({})], 1_000).settled).toBe(true);
  });

  it('keeps a title it cannot read as the detector writes it', () => {
    expect(mergeIncidentParts([part({ title: 'custom' }), part({ title: 'custom' })], 1_000).title).toBe(
      'custom',
    );
  });

  it('is the part itself when there is one', () => {
    const only = part({ keys: 4 });
    expect(mergeIncidentParts([only], 1_000)).toBe(only);
  });
});

/** Key `i` executed in two node stores; every third key after a proxy's 502, the rest after a timeout. */
function runTwice(i: number): Attempt[] {
  const key = `k${i}`;
  const traceId = String(i + 1).padStart(32, '0');
  const first = client({ key, traceId, at: i, durationMillis: 2000, statusCode: i % 3 === 0 ? 502 : 0 });
  const retry = client({ key, traceId, at: i + 2.2, resendCount: 1 });
  return [
    first,
    retry,
    server({
      key,
      traceId,
      parentSpanId: first.spanId,
      node: 'a',
      store: 'payments/node:a',
      at: i,
      durationMillis: 1000 + i * 10,
    }),
    server({
      key,
      traceId,
      parentSpanId: retry.spanId,
      node: i % 2 === 0 ? 'b' : 'c',
      store: `payments/node:${i % 2 === 0 ? 'b' : 'c'}`,
      at: i + 2.21,
    }),
  ];
}

function incidentOf(keys: number[]): Incident {
  const detector = createDetector({ ...defaultDetectorConfig(), incidentBucketMillis: 3_600_000 });
  detector.ingest({
    attempts: keys.flatMap(runTwice),
    activity: [],
    invalid: { outcome: 0, hit: 0, scope: 0 },
  });
  detector.flush();
  const [incident, ...others] = detector.incidents();
  expect(others).toEqual([]);
  return incident!;
}

describe('the words of an incident reported in parts', () => {
  it("says what the whole incident's keys say, not the largest part's", () => {
    const keys = Array.from({ length: 12 }, (_, i) => i);
    const whole = incidentOf(keys);
    const merged = mergeIncidentParts(
      [incidentOf(keys.filter((k) => k % 3 !== 1)), incidentOf(keys.filter((k) => k % 3 === 1))],
      1_000,
    );
    expect(merged.keys).toBe(12);
    expect(merged.title).toBe(whole.title);
    expect(merged.advice).toBe(whole.advice);
    expect(merged.adviceSentences).toEqual(whole.adviceSentences);
    expect(merged.advice).toContain('8 of 12 keys were retried after the caller');
  });
});
