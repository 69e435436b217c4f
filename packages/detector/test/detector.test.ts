import {
  type Attempt,
  type ExtractedAttempts,
  emptyLatency,
  latencyBucketOf,
  type NodeActivity,
} from '@keyscope/attempts';
import { activity, arrival, client, effect, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import {
  createCompactAttemptLog,
  createDetector,
  createMemoryAttemptLog,
  type Detector,
  defaultDetectorConfig,
  type Finding,
  type Incident,
  type RoutingEvent,
} from '../src/index.ts';

function batch(attempts: Attempt[], nodeActivity: NodeActivity[] = []): ExtractedAttempts {
  return {
    attempts,
    activity: nodeActivity,
    invalid: { outcome: 0, hit: 0, scope: 0 },
  };
}

function run(attempts: Attempt[], nodeActivity: NodeActivity[] = [], config = defaultDetectorConfig()) {
  const detector = createDetector(config);
  detector.ingest(batch(attempts, nodeActivity));
  detector.flush();
  return detector;
}

function only(findings: Finding[]): Finding {
  expect(findings).toHaveLength(1);
  return findings[0]!;
}

describe('duplicate executions', () => {
  it('flags two misses of one key in two node stores as a cross-store duplicate', () => {
    const detector = run([
      server({ key: 'k1', node: 'a', store: 'payments/node:a', at: 0, durationMillis: 1900 }),
      server({ key: 'k1', node: 'b', store: 'payments/node:b', at: 2.1 }),
    ]);
    const finding = only(detector.findings());
    expect(finding.class).toBe('cross_store_duplicate');
    expect(finding.severity).toBe('critical');
    expect(finding.executions).toBe(2);
    expect(finding.stores).toEqual(['payments/node:a', 'payments/node:b']);
    expect(finding.routing.affinityBroken).toBe(true);
    // From start to start; the time between the first's end and the repeat's start is idleMillis.
    expect(finding.gapMillis).toBe(2100);
    expect(finding.idleMillis).toBe(200);
    expect(finding.attempts).toHaveLength(2);
  });

  it('reports nothing when the retry is answered with a hit by the same store', () => {
    const detector = run([
      client({ key: 'k1', at: 0 }),
      server({ key: 'k1', node: 'a', at: 0 }),
      client({ key: 'k1', at: 2, resendCount: 1 }),
      server({ key: 'k1', node: 'a', at: 2, outcome: 'hit' }),
    ]);
    expect(detector.findings()).toEqual([]);
    expect(detector.incidents()).toEqual([]);
  });

  it('calls two overlapping executions in one store a race', () => {
    const detector = run([
      server({ key: 'k1', store: 's', at: 0, durationMillis: 500 }),
      server({ key: 'k1', store: 's', at: 0.2, durationMillis: 500 }),
    ]);
    const finding = only(detector.findings());
    expect(finding.class).toBe('same_store_duplicate');
    expect(finding.cause).toBe('race');
  });

  it('calls a back-to-back repeat an expired key, not a race, when only a millisecond clock makes it overlap', () => {
    // Spans of the JS SDK: starts in whole milliseconds, ends a measured duration after them.
    const first = server({ key: 'k1', store: 's', at: 0 });
    const detector = run([
      { ...first, startUnixMillis: 1_000, endUnixMillis: 1_004.7 },
      { ...server({ key: 'k1', store: 's', at: 0 }), startUnixMillis: 1_004, endUnixMillis: 1_006.2 },
    ]);
    expect(only(detector.findings()).cause).toBe('ttl_expired');
  });

  it('calls two executions in one store hours apart an expired key', () => {
    const detector = run([
      server({ key: 'k1', store: 's', at: 0 }),
      server({ key: 'k1', store: 's', at: 7200 }),
    ]);
    const finding = only(detector.findings());
    expect(finding.class).toBe('same_store_duplicate');
    expect(finding.cause).toBe('ttl_expired');
  });

  it('treats one execution per tier of a key that flows down a chain as no duplicate', () => {
    const detector = run([
      server({ key: 'k1', traceId: 't1'.padEnd(32, '0'), service: 'payments', node: 'p1', at: 0 }),
      server({
        key: 'k1',
        traceId: 't1'.padEnd(32, '0'),
        service: 'ledger',
        node: 'l1',
        operation: '/entries',
        at: 0.1,
      }),
    ]);
    expect(detector.findings()).toEqual([]);
  });

  it('calls a front-tier repeat caught by a downstream hit an absorbed duplicate', () => {
    const t1 = '1'.repeat(32);
    const t2 = '2'.repeat(32);
    const detector = run([
      server({ key: 'k1', traceId: t1, node: 'p1', store: 'payments/node:p1', at: 0 }),
      server({
        key: 'k1',
        traceId: t1,
        service: 'ledger',
        node: 'l1',
        store: 'ledger/global',
        scope: 'global',
        operation: '/entries',
        at: 0.1,
      }),
      server({ key: 'k1', traceId: t2, node: 'p2', store: 'payments/node:p2', at: 3 }),
      server({
        key: 'k1',
        traceId: t2,
        service: 'ledger',
        node: 'l1',
        store: 'ledger/global',
        scope: 'global',
        operation: '/entries',
        outcome: 'hit',
        at: 3.1,
      }),
    ]);
    const finding = only(detector.findings());
    expect(finding.class).toBe('absorbed_duplicate');
    expect(finding.severity).toBe('warning');
    expect(finding.service).toBe('payments');
  });

  it('reports the duplicate at the downstream tier when the downstream store did not catch it', () => {
    const t1 = '1'.repeat(32);
    const t2 = '2'.repeat(32);
    const detector = run([
      server({ key: 'k1', traceId: t1, node: 'p1', store: 'payments/node:p1', at: 0 }),
      server({
        key: 'k1',
        traceId: t1,
        service: 'ledger',
        node: 'l1',
        store: 'ledger/node:l1',
        operation: '/entries',
        at: 0.1,
      }),
      server({ key: 'k1', traceId: t2, node: 'p2', store: 'payments/node:p2', at: 3 }),
      server({
        key: 'k1',
        traceId: t2,
        service: 'ledger',
        node: 'l2',
        store: 'ledger/node:l2',
        operation: '/entries',
        at: 3.1,
      }),
    ]);
    const finding = only(detector.findings());
    expect(finding.class).toBe('cross_store_duplicate');
    expect(finding.service).toBe('ledger');
    expect(finding.operation).toBe('/entries');
  });
});

describe('who retried', () => {
  it('blames a proxy when the client sent once and the servers executed twice', () => {
    const send = client({ key: 'k1', at: 0 });
    const detector = run([
      send,
      server({ key: 'k1', traceId: send.traceId, parentSpanId: send.spanId, node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', traceId: send.traceId, parentSpanId: send.spanId, node: 'b', store: 'B', at: 1 }),
    ]);
    expect(only(detector.findings()).retriedBy).toBe('proxy');
  });

  it('blames the client when it sent the request twice', () => {
    const first = client({ key: 'k1', at: 0 });
    const retry = client({ key: 'k1', at: 2, resendCount: 1 });
    const detector = run([
      first,
      retry,
      server({ key: 'k1', parentSpanId: first.spanId, node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', parentSpanId: retry.spanId, node: 'b', store: 'B', at: 2 }),
    ]);
    expect(only(detector.findings()).retriedBy).toBe('client');
  });

  it('blames a proxy when two server spans name one parent send whose CLIENT span carries no key', () => {
    // The send timed out, so its CLIENT span recorded no request headers; the client's retry got
    // a response and carries the key. The two executions under the first send are the proxy's.
    const timedOutSpanId = '00000000000000aa';
    const retry = client({ key: 'k1', traceId: 't'.repeat(32), at: 2.2, resendCount: 1 });
    const detector = run([
      retry,
      server({
        key: 'k1',
        traceId: retry.traceId,
        parentSpanId: timedOutSpanId,
        node: 'a',
        store: 'A',
        at: 0,
      }),
      server({
        key: 'k1',
        traceId: retry.traceId,
        parentSpanId: timedOutSpanId,
        node: 'b',
        store: 'B',
        at: 1,
      }),
      server({
        key: 'k1',
        traceId: retry.traceId,
        parentSpanId: retry.spanId,
        node: 'c',
        store: 'C',
        at: 2.3,
      }),
    ]);
    expect(only(detector.findings()).retriedBy).toBe('proxy');
  });

  it('follows a decision on a child span up to its SERVER span to find the send', () => {
    const traceId = 'e'.repeat(32);
    const send = '00000000000000bb';
    const requests = [
      arrival({ key: 'k1', traceId, spanId: '0000000000000001', parentSpanId: send, node: 'a', at: 0 }),
      arrival({ key: 'k1', traceId, spanId: '0000000000000002', parentSpanId: send, node: 'b', at: 1 }),
    ];
    const detector = run([
      client({ key: 'k1', traceId, at: 3, resendCount: 1 }),
      ...requests,
      ...requests.map((request, i) =>
        server({
          key: 'k1',
          traceId,
          parentSpanId: request.spanId,
          node: request.placement.node,
          store: `S${i}`,
          at: i,
        }),
      ),
    ]);
    expect(only(detector.findings()).retriedBy).toBe('proxy');
  });

  it('says unknown without client spans', () => {
    const detector = run([
      server({ key: 'k1', store: 'A', at: 0 }),
      server({ key: 'k1', store: 'B', at: 1 }),
    ]);
    expect(only(detector.findings()).retriedBy).toBe('unknown');
  });
});

describe('retry timing', () => {
  it("reads a request that lasted as long as its caller's timed-out send as cut off at the disconnect, whatever status it shows", () => {
    const traceId = 'c'.repeat(32);
    const first = client({ key: 'k1', traceId, at: 0, durationMillis: 1500, statusCode: 0, error: 'Error' });
    const retry = client({ key: 'k1', traceId, at: 1.8, resendCount: 1 });
    // The SERVER span starts a hop after the send and ends when the caller's socket closes: 1497 ms.
    const request = arrival({
      key: 'k1',
      traceId,
      parentSpanId: first.spanId,
      node: 'a',
      at: 0.002,
      durationMillis: 1497,
      statusCode: 200,
    });
    const retried = arrival({
      key: 'k1',
      traceId,
      parentSpanId: retry.spanId,
      node: 'b',
      at: 1.801,
      durationMillis: 300,
      statusCode: 201,
    });
    const detector = run([
      first,
      retry,
      request,
      retried,
      server({
        key: 'k1',
        traceId,
        parentSpanId: request.spanId,
        node: 'a',
        store: 'S',
        operation: 'idempotency.check',
        at: 0.003,
        durationMillis: 2,
        effect: 'unknown',
      }),
      server({
        key: 'k1',
        traceId,
        parentSpanId: retried.spanId,
        node: 'b',
        store: 'S',
        operation: 'idempotency.check',
        at: 1.802,
        durationMillis: 2,
        effect: 'unknown',
      }),
    ]);
    const finding = only(detector.findings());
    expect(finding).toMatchObject({ operation: '/payments', retryAfter: 'timeout', callerWaitMillis: 1500 });
    expect(finding.firstExecutionClipped).toBe(true);
    expect(finding.outlivedCallerWait).toBe(true);
  });

  it('records how long the caller waited, how long the first execution ran and that it outlived the wait', () => {
    const traceId = 'f'.repeat(32);
    const first = client({
      key: 'k1',
      traceId,
      at: 0,
      durationMillis: 2000,
      statusCode: 0,
      error: 'timeout',
    });
    const retry = client({ key: 'k1', traceId, at: 2.2, resendCount: 1 });
    const detector = run([
      first,
      retry,
      server({
        key: 'k1',
        traceId,
        parentSpanId: first.spanId,
        node: 'node-a2',
        store: 'A',
        at: 0.01,
        durationMillis: 2400,
      }),
      server({
        key: 'k1',
        traceId,
        parentSpanId: retry.spanId,
        node: 'node-b1',
        store: 'B',
        at: 2.21,
        durationMillis: 300,
      }),
    ]);
    const finding = only(detector.findings());
    expect(finding.retriedBy).toBe('client');
    expect(finding.gapMillis).toBeCloseTo(2200, 6);
    expect(finding.idleMillis).toBeCloseTo(-200, 6);
    expect(finding.callerWaitMillis).toBe(2000);
    expect(finding.firstExecutionMillis).toBe(2400);
    expect(finding.outlivedCallerWait).toBe(true);
    const advice = detector.incidents()[0]!.advice;
    expect(finding.retryAfter).toBe('timeout');
    expect(advice).toContain("The key was retried after the caller's send timed out, at 2.0 s");
    expect(advice).toContain('First executions on node-a2 ran 2.4 s at p90 (1 of 1 key known)');
    // Context, never the fix: the advice still leads with the scope rule.
    expect(advice).toMatch(/Smallest sound fix: widen the key namespace/);
  });

  /**
   * A caller that timed out at 2 s, its first request on node-a2 and its retry on node-b1. The
   * first request's SERVER span is as the Node HTTP instrumentation ends it: at `firstEndsAt`
   * seconds, answered as `answer` says — at the caller's disconnect, Node's default 200 and the
   * gate's admission-time `idempotency.effect: unknown`, no response sent.
   */
  function timedOutThenRetried(
    firstEndsAt: number,
    answer: { statusCode: number; effect: 'unknown' | 'committed' },
    underFirst: (first: Attempt) => Attempt[] = () => [],
  ): Detector {
    const traceId = 'e'.repeat(32);
    const send = client({ key: 'k1', traceId, at: 0, durationMillis: 2000, statusCode: 0, error: 'timeout' });
    const retry = client({ key: 'k1', traceId, at: 2.2, resendCount: 1, statusCode: 201 });
    const first = server({
      key: 'k1',
      traceId,
      parentSpanId: send.spanId,
      node: 'node-a2',
      store: 'A',
      at: 0.01,
      durationMillis: firstEndsAt * 1000 - 10,
      ...answer,
    });
    return run([
      send,
      retry,
      first,
      ...underFirst(first),
      server({
        key: 'k1',
        traceId,
        parentSpanId: retry.spanId,
        node: 'node-b1',
        store: 'B',
        at: 2.21,
        statusCode: 201,
        effect: 'committed',
      }),
    ]);
  }

  it('reads a first execution whose SERVER span ended at its caller’s disconnect as running at least until the caller left', () => {
    const detector = timedOutThenRetried(2, { statusCode: 200, effect: 'unknown' });
    const finding = only(detector.findings());
    expect(finding.firstExecutionClipped).toBe(true);
    expect(finding.firstExecutionMillis).toBe(1990);
    expect(finding.outlivedCallerWait).toBe(true);
    const advice = detector.incidents()[0]!.advice;
    expect(advice).toContain("1 of 1 first execution outlived the caller's wait");
    expect(advice).toContain('The first execution was still running when its caller left');
  });

  it('measures a clipped first execution to the end of the side-effect span under it', () => {
    const detector = timedOutThenRetried(2, { statusCode: 200, effect: 'unknown' }, (first) => [
      effect({
        key: 'k1',
        traceId: first.traceId,
        parentSpanId: first.spanId,
        node: 'node-a2',
        at: 2.5,
        durationMillis: 300,
      }),
    ]);
    const finding = only(detector.findings());
    expect(finding.firstExecutionClipped).toBe(true);
    expect(finding.firstExecutionMillis).toBe(2790);
    expect(finding.outlivedCallerWait).toBe(true);
  });

  it('reads a request whose own SERVER span answered as ended there, though a decision span under it said unknown', () => {
    const traceId = 'd'.repeat(32);
    const send = client({ key: 'k1', traceId, at: 0, durationMillis: 2000, statusCode: 0, error: 'timeout' });
    const retry = client({ key: 'k1', traceId, at: 2.2, resendCount: 1, statusCode: 201 });
    const request = arrival({
      key: 'k1',
      traceId,
      parentSpanId: send.spanId,
      node: 'node-a2',
      at: 0.01,
      durationMillis: 1490,
      statusCode: 200,
    });
    const detector = run([
      send,
      retry,
      request,
      // A middleware's decision span, ended at admission with the effect it knew then.
      server({
        key: 'k1',
        traceId,
        parentSpanId: request.spanId,
        node: 'node-a2',
        store: 'A',
        at: 0.02,
        durationMillis: 5,
        effect: 'unknown',
      }),
      server({ key: 'k1', traceId, parentSpanId: retry.spanId, node: 'node-b1', store: 'B', at: 2.21 }),
    ]);
    const finding = only(detector.findings());
    expect(finding.firstExecutionClipped).toBe(false);
    expect(finding.firstExecutionMillis).toBe(1490);
    expect(finding.outlivedCallerWait).toBe(false);
  });

  it('says a first execution that answered within the wait ended within it', () => {
    const detector = timedOutThenRetried(1.5, { statusCode: 201, effect: 'committed' });
    const finding = only(detector.findings());
    expect(finding.firstExecutionClipped).toBe(false);
    expect(finding.firstExecutionMillis).toBe(1490);
    expect(finding.outlivedCallerWait).toBe(false);
    const advice = detector.incidents()[0]!.advice;
    expect(advice).toContain("0 of 1 first execution outlived the caller's wait.");
    expect(advice).not.toContain('still running when its caller left');
  });

  it('leaves the caller’s wait unknown when no CLIENT span of the key shows a failed send', () => {
    const detector = run([
      server({ key: 'k1', node: 'a', store: 'A', at: 0, durationMillis: 1500 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 1 }),
    ]);
    const finding = only(detector.findings());
    expect(finding.callerWaitMillis).toBeNull();
    expect(finding.firstExecutionMillis).toBe(1500);
    expect(finding.outlivedCallerWait).toBeNull();
  });
});

describe('key collisions and scope violations', () => {
  it('flags a hit that replayed another tenant’s result as a key collision', () => {
    const detector = run([
      server({ key: 'k1', tenant: 'acme', store: 'payments/global', scope: 'global', at: 0 }),
      server({
        key: 'k1',
        tenant: 'globex',
        store: 'payments/global',
        scope: 'global',
        outcome: 'hit',
        at: 5,
      }),
    ]);
    const finding = only(detector.findings());
    expect(finding.class).toBe('key_collision');
    expect(finding.cause).toBe('cross_tenant_replay');
    expect(finding.severity).toBe('high');
    expect(finding.tenants).toEqual(['acme', 'globex']);
  });

  it('does not count two tenants’ executions of one key as a duplicate', () => {
    const detector = run([
      server({ key: 'k1', tenant: 'acme', store: 'A', at: 0 }),
      server({ key: 'k1', tenant: 'globex', store: 'B', at: 5 }),
    ]);
    expect(detector.findings().map((f) => f.class)).toEqual(['key_collision']);
  });

  it('groups by tenant and key when keys are tenant-scoped, so sharing a key is no collision', () => {
    const detector = run(
      [
        server({ key: 'k1', tenant: 'acme', store: 'S', at: 0 }),
        server({ key: 'k1', tenant: 'globex', store: 'S', at: 5 }),
      ],
      [],
      { ...defaultDetectorConfig(), keyNamespace: 'tenant' },
    );
    expect(detector.findings()).toEqual([]);
  });

  it('keeps the duplicates of two tenants sharing a tenant-scoped key apart', () => {
    const tenantScoped = { ...defaultDetectorConfig(), keyNamespace: 'tenant' as const };
    const detector = createDetector(tenantScoped);
    detector.ingest(
      batch([
        server({ key: 'k1', tenant: 'acme', node: 'a', store: 'A', at: 0 }),
        server({ key: 'k1', tenant: 'acme', node: 'b', store: 'B', at: 2 }),
        server({ key: 'k1', tenant: 'globex', node: 'a', store: 'A', at: 1 }),
        server({ key: 'k1', tenant: 'globex', node: 'b', store: 'B', at: 3 }),
      ]),
    );
    const findings = detector.findings();
    expect(findings.map((f) => [f.class, f.tenant]).sort()).toEqual([
      ['cross_store_duplicate', 'acme'],
      ['cross_store_duplicate', 'globex'],
    ]);
    expect(new Set(findings.map((f) => f.id)).size).toBe(2);
    // A later attempt of one tenant's key re-judges it alone: the other's finding stays.
    const changes = detector.ingest(
      batch([server({ key: 'k1', tenant: 'acme', node: 'a', store: 'A', outcome: 'hit', at: 4 })]),
    );
    expect(changes.retractedFindingIds).toEqual([]);
    expect(
      detector
        .findings()
        .map((f) => f.tenant)
        .sort(),
    ).toEqual(['acme', 'globex']);
  });

  it('warns of a scope violation when a retry reached a second store without executing', () => {
    const detector = run([
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', outcome: 'error', at: 2 }),
    ]);
    const finding = only(detector.findings());
    expect(finding.class).toBe('scope_violation');
    expect(finding.severity).toBe('warning');
  });

  it('retracts the scope violation when the key later executes in the second store', () => {
    const detector = createDetector();
    const first = detector.ingest(
      batch([
        server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
        server({ key: 'k1', node: 'b', store: 'B', outcome: 'error', at: 1 }),
      ]),
    );
    expect(first.findings.map((f) => f.class)).toEqual(['scope_violation']);
    const second = detector.ingest(batch([server({ key: 'k1', node: 'b', store: 'B', at: 4 })]));
    expect(second.findings.map((f) => f.class)).toEqual(['cross_store_duplicate']);
    expect(second.retractedFindingIds).toEqual([first.findings[0]!.id]);
    expect(second.retractedIncidentIds).toEqual([first.findings[0]!.incidentId]);
    expect(detector.findings().map((f) => f.class)).toEqual(['cross_store_duplicate']);
  });
});

describe('arrival order and redelivery', () => {
  it('emits the finding in the call that delivers the second execution', () => {
    const detector = createDetector();
    expect(detector.ingest(batch([server({ key: 'k1', store: 'A', at: 0 })])).findings).toEqual([]);
    const changes = detector.ingest(batch([server({ key: 'k1', store: 'B', at: 2 })]));
    expect(changes.findings).toHaveLength(1);
    expect(changes.incidents).toHaveLength(1);
    expect(changes.findings[0]!.incidentId).toBe(changes.incidents[0]!.id);
  });

  it('ignores a redelivered attempt (same trace and span id)', () => {
    const attempt = server({ key: 'k1', store: 'A', at: 0 });
    const detector = run([attempt, { ...attempt }, { ...attempt }]);
    expect(detector.findings()).toEqual([]);
    expect(detector.stats().duplicateAttempts).toBe(2);
  });

  it('yields the same finding and incident ids for any order of the same attempts', () => {
    const attempts = [
      client({ key: 'k1', at: 0 }),
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      client({ key: 'k1', at: 2, resendCount: 1 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 2 }),
      server({ key: 'k2', node: 'a', store: 'A', at: 1 }),
      server({ key: 'k2', node: 'b', store: 'B', outcome: 'error', at: 3 }),
      server({ key: 'k3', store: 'A', at: 5, durationMillis: 400 }),
      server({ key: 'k3', store: 'A', at: 5.1, durationMillis: 400 }),
    ];
    const expected = summary(run(attempts).findings());
    let seed = 7;
    for (let round = 0; round < 25; round++) {
      const shuffled = [...attempts];
      for (let i = shuffled.length - 1; i > 0; i--) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        const j = seed % (i + 1);
        [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
      }
      const detector = createDetector();
      for (const attempt of shuffled)
        detector.ingest(batch([attempt, ...(round % 2 === 0 ? [attempt] : [])]));
      detector.flush();
      expect(summary(detector.findings())).toEqual(expected);
    }
  });
});

describe('payloads delivered again', () => {
  it('counts the activity of a payload delivered again once, also when it is committed with new ones', () => {
    const first = server({ key: 'k1', node: 'a', store: 'A', at: 0 });
    const payload = batch([first], activity({ node: 'a', fromSecond: 0, toSecond: 1 }));
    const fresh = batch(
      [server({ key: 'k2', node: 'b', store: 'B', at: 1 })],
      activity({ node: 'b', fromSecond: 1, toSecond: 2 }),
    );
    const detector = createDetector();
    expect(detector.ingest(payload).activity).toEqual(payload.activity);
    // The retry of the first payload, committed with a new one and with a copy of that new one.
    const changes = detector.ingest([fresh, { ...payload }, { ...fresh }]);
    expect(changes.activity).toEqual(fresh.activity);
    expect(detector.stats().duplicateAttempts).toBe(2);
  });
});

function summary(findings: Finding[]) {
  return findings
    .map((f) => ({
      id: f.id,
      class: f.class,
      cause: f.cause,
      incidentId: f.incidentId,
      retriedBy: f.retriedBy,
      executions: f.executions,
    }))
    .sort((a, b) => (a.id < b.id ? -1 : 1));
}

describe('routing events and incidents', () => {
  // payments nodes a, b, c serve steadily; node a goes silent from second 60 to 120.
  const traffic = [
    ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
    ...activity({ node: 'a', fromSecond: 120, toSecond: 180 }),
    ...activity({ node: 'b', fromSecond: 0, toSecond: 180 }),
    ...activity({ node: 'c', fromSecond: 0, toSecond: 180 }),
  ];

  it('infers a node going silent while the rest of its service serves as node_down', () => {
    const detector = run([], traffic);
    const events = detector.routingEvents();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'node_down',
      service: 'payments',
      node: 'a',
      startUnixMillis: TEST_EPOCH_UNIX_MILLIS + 60_000,
      endUnixMillis: TEST_EPOCH_UNIX_MILLIS + 120_000,
      ended: true,
    });
  });

  it('groups the duplicates of one failover into one incident tied to the routing event', () => {
    const attempts = [];
    for (let i = 0; i < 30; i++) {
      attempts.push(server({ key: `k${i}`, node: 'a', store: 'A', at: 58 + i * 0.05, durationMillis: 1900 }));
      attempts.push(
        server({ key: `k${i}`, node: i % 2 ? 'b' : 'c', store: i % 2 ? 'B' : 'C', at: 61 + i * 0.05 }),
      );
    }
    const detector = run(attempts, traffic);
    const incidents = detector.incidents();
    expect(incidents).toHaveLength(1);
    expect(incidents[0]!.keys).toBe(30);
    expect(incidents[0]!.routingEvent?.type).toBe('node_down');
    expect(detector.findings().every((f) => f.routing.event?.id === incidents[0]!.routingEvent?.id)).toBe(
      true,
    );
  });

  it('moves findings from a time-bucket incident to the failover incident once the failover is seen', () => {
    const detector = createDetector();
    const early = detector.ingest(
      batch(
        [
          server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 }),
          server({ key: 'k1', node: 'b', store: 'B', at: 61 }),
        ],
        traffic.filter((sample) => sample.bucketStartUnixMillis < TEST_EPOCH_UNIX_MILLIS + 62_000),
      ),
    );
    const bucketIncident = early.incidents[0]!;
    expect(bucketIncident.routingEvent).toBeNull();
    detector.ingest(
      batch(
        [],
        traffic.filter((sample) => sample.bucketStartUnixMillis >= TEST_EPOCH_UNIX_MILLIS + 62_000),
      ),
    );
    const later = detector.tick(TEST_EPOCH_UNIX_MILLIS + 180_000);
    expect(later.retractedIncidentIds).toContain(bucketIncident.id);
    expect(later.incidents).toHaveLength(1);
    expect(later.incidents[0]!.routingEvent?.type).toBe('node_down');
  });

  it('judges the keys a tick regroups a step at a time when asked to, and ends where a whole tick ends', () => {
    const attempts: Attempt[] = [];
    for (let i = 0; i < 30; i++) {
      attempts.push(server({ key: `k${i}`, node: 'a', store: 'A', at: 58 + i * 0.05, durationMillis: 1900 }));
      attempts.push(server({ key: `k${i}`, node: 'b', store: 'B', at: 61 + i * 0.05 }));
    }
    const early = traffic.filter((sample) => sample.bucketStartUnixMillis < TEST_EPOCH_UNIX_MILLIS + 62_000);
    const late = traffic.filter((sample) => sample.bucketStartUnixMillis >= TEST_EPOCH_UNIX_MILLIS + 62_000);
    const now = TEST_EPOCH_UNIX_MILLIS + 180_000;
    const seen = () => {
      const detector = createDetector();
      detector.ingest(batch(attempts, early));
      detector.ingest(batch([], late));
      return detector;
    };
    const whole = seen();
    whole.tick(now);
    const stepped = seen();
    const first = stepped.tick(now, { maxRegroupedKeys: 12 });
    expect(first.findings).toHaveLength(12);
    expect(stepped.regroupedKeys()).toBe(18);
    expect(stepped.stats().regroupedKeys).toBe(18);
    // The failover's incident waits for its other 18 keys before it settles.
    expect(first.incidents.every((incident) => !incident.settled)).toBe(true);
    const second = stepped.judgeRegrouped(12);
    expect(second.findings).toHaveLength(12);
    expect(stepped.regroupedKeys()).toBe(6);
    const last = stepped.judgeRegrouped(12);
    expect(last.findings).toHaveLength(6);
    expect(stepped.regroupedKeys()).toBe(0);
    expect(last.incidents.some((incident) => incident.settled)).toBe(true);
    expect(stepped.findings()).toEqual(whole.findings());
    expect(stepped.incidents()).toEqual(whole.incidents());
  });

  it('reports a finding again when its routing event ends, so the last version reported is the current one', () => {
    const detector = createDetector();
    const reported = new Map<string, Finding>();
    const reportedIncidents = new Map<string, Incident>();
    const attempts = [
      server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 61 }),
    ];
    // Live: each second's activity and attempts as they happen, and a tick a second later.
    for (let second = 0; second < 200; second++) {
      const from = TEST_EPOCH_UNIX_MILLIS + second * 1000;
      const inSecond = (unixMillis: number) => unixMillis >= from && unixMillis < from + 1000;
      const changes = [
        detector.ingest(
          batch(
            attempts.filter((attempt) => inSecond(attempt.startUnixMillis)),
            traffic.filter((sample) => inSecond(sample.bucketStartUnixMillis)),
          ),
        ),
        detector.tick(from + 1000),
      ];
      for (const change of changes) {
        for (const finding of change.findings) reported.set(finding.id, finding);
        for (const incident of change.incidents) reportedIncidents.set(incident.id, incident);
      }
    }
    const [finding] = detector.findings();
    expect(finding!.routing.event).toMatchObject({ type: 'node_down', ended: true });
    expect(reported.get(finding!.id)).toEqual(finding);
    const [incident] = detector.incidents();
    expect(reportedIncidents.get(incident!.id)).toEqual(incident);
  });

  it('composes every node of a region going down into one region failover', () => {
    const regional = [
      ...activity({ node: 'eu1', region: 'eu', cluster: 'eu-c', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'eu2', region: 'eu', cluster: 'eu-c', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'us1', region: 'us', cluster: 'us-c', fromSecond: 0, toSecond: 120 }),
    ];
    const events = run([], regional).routingEvents();
    expect(events.map((e) => [e.type, e.region])).toEqual([['region_failover', 'eu']]);
  });

  it('resolves an incident after the quiet period', () => {
    const detector = run([
      server({ key: 'k1', store: 'A', at: 0 }),
      server({ key: 'k1', store: 'B', at: 2 }),
    ]);
    expect(detector.incidents()[0]!.status).toBe('open');
    const changes = detector.tick(
      TEST_EPOCH_UNIX_MILLIS + 2000 + defaultDetectorConfig().quietPeriodMillis + 1000,
    );
    expect(changes.incidents.map((i) => i.status)).toEqual(['resolved']);
  });
});

describe('which routing event a duplicate is blamed on', () => {
  // Node b is down from second 20 to 40 and back; node a goes down at 60 and stays down to 120.
  const traffic = [
    ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
    ...activity({ node: 'a', fromSecond: 120, toSecond: 180 }),
    ...activity({ node: 'b', fromSecond: 0, toSecond: 20 }),
    ...activity({ node: 'b', fromSecond: 40, toSecond: 180 }),
    ...activity({ node: 'c', fromSecond: 0, toSecond: 180 }),
  ];

  it('blames the event of the node where the key first ran, not an earlier one of the node it ran again on', () => {
    const detector = run(
      [
        server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 }),
        server({ key: 'k1', node: 'b', store: 'B', at: 61 }),
      ],
      traffic,
    );
    expect(detector.routingEvents().map((e) => e.node)).toEqual(['b', 'a']);
    expect(only(detector.findings()).routing.event).toMatchObject({ type: 'node_down', node: 'a' });
    expect(detector.incidents()[0]!.title).toMatch(/during node down of a$/);
  });

  it('blames no event when nothing happened where the key first ran', () => {
    const detector = run(
      [
        server({ key: 'k1', node: 'c', store: 'C', at: 45, durationMillis: 2500 }),
        server({ key: 'k1', node: 'b', store: 'B', at: 47.2 }),
      ],
      traffic,
    );
    expect(only(detector.findings()).routing.event).toBeNull();
    expect(detector.incidents()[0]!.routingEvent).toBeNull();
  });

  it('blames the node whose store failed the first attempt for a retry that crossed into a second store', () => {
    const spiky = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 10 }),
      ...activity({ node: 'a', fromSecond: 10, toSecond: 20, errors: 8 }),
      ...activity({ node: 'a', fromSecond: 20, toSecond: 30 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 30 }),
    ];
    const detector = run(
      [
        server({ key: 'k1', node: 'a', store: 'A', outcome: 'error', at: 12 }),
        server({ key: 'k1', node: 'b', store: 'B', at: 12.4 }),
      ],
      spiky,
    );
    expect(only(detector.findings())).toMatchObject({
      class: 'scope_violation',
      routing: { event: { type: 'error_spike', node: 'a' } },
    });
  });

  it('blames no routing event for a key two tenants chose, even on a node that went down', () => {
    const detector = run(
      [
        server({ key: 'k1', tenant: 'acme', node: 'a', store: 'G', scope: 'global', at: 58 }),
        server({ key: 'k1', tenant: 'globex', node: 'c', store: 'G', scope: 'global', at: 61 }),
      ],
      traffic,
    );
    expect(only(detector.findings())).toMatchObject({ class: 'key_collision', routing: { event: null } });
  });

  it('opens the incident when its first key ran again, not before the routing event it cites', () => {
    const attempts = [];
    for (let i = 0; i < 5; i++) {
      attempts.push(server({ key: `k${i}`, node: 'a', store: 'A', at: 57 + i * 0.1, durationMillis: 2900 }));
      attempts.push(server({ key: `k${i}`, node: 'c', store: 'C', at: 62 + i * 0.1 }));
    }
    const [incident] = run(attempts, traffic).incidents();
    expect(incident!.routingEvent?.startUnixMillis).toBe(TEST_EPOCH_UNIX_MILLIS + 60_000);
    expect(incident!.openedUnixMillis).toBe(TEST_EPOCH_UNIX_MILLIS + 62_000);
  });
});

describe('routing inference on event time', () => {
  const LATENESS = defaultDetectorConfig().allowedLatenessMillis;
  const at = (second: number) => TEST_EPOCH_UNIX_MILLIS + second * 1000;
  /** Second `second` of node activity: one sample per node. */
  const second = (traffic: NodeActivity[], s: number) =>
    traffic.filter((sample) => sample.bucketStartUnixMillis === at(s));

  it('does not take a node whose spans arrive late for a node that went down', () => {
    const detector = createDetector();
    const traffic = ['a', 'b', 'c'].flatMap((node) => activity({ node, fromSecond: 0, toSecond: 60 }));
    const seen = new Set<string>();
    // Node c's exporter runs 6 s behind a's and b's, within the allowed lateness.
    for (let s = 0; s < 66; s++) {
      const arriving = [
        ...second(traffic, s).filter((x) => x.placement.node !== 'c'),
        ...second(traffic, s - 6),
      ];
      detector.ingest(
        batch(
          [],
          arriving.filter((x) => x.placement.node !== 'c' || s - 6 >= 0),
        ),
      );
      const changes = detector.tick(at(s + 1));
      for (const event of [...(changes.routingEvents ?? []), ...detector.routingEvents()]) seen.add(event.id);
    }
    expect(seen.size).toBe(0);
  });

  it('reports a duplicate at once and settles its incident under the failover once the activity after it is final', () => {
    const traffic = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 120 }),
      ...activity({ node: 'c', fromSecond: 0, toSecond: 120 }),
    ];
    const attempts = [
      server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 61 }),
    ];
    const detector = createDetector();
    const reported: Incident[] = [];
    let settledAt: number | undefined;
    for (let s = 0; s < 120; s++) {
      const arriving = attempts.filter(
        (a) => Math.floor((a.startUnixMillis - TEST_EPOCH_UNIX_MILLIS) / 1000) === s,
      );
      const ingested = detector.ingest(batch(arriving, second(traffic, s)));
      if (s === 61) expect(ingested.findings.map((f) => f.key)).toEqual(['k1']);
      const ticked = detector.tick(at(s + 1));
      reported.push(...ingested.incidents, ...ticked.incidents);
      if (settledAt === undefined && ticked.incidents.some((i) => i.settled)) settledAt = at(s + 1);
    }
    // Never settled in a time-bucket incident first, which would page once more than the failover.
    const settled = reported.filter((i) => i.settled);
    expect(new Set(settled.map((i) => i.id)).size).toBe(1);
    expect(settled[0]!.routingEvent).toMatchObject({ type: 'node_down', node: 'a' });
    // Settled once the clock is the lateness past the repeat and the silence it takes to see a node down.
    expect(settledAt).toBeGreaterThanOrEqual(at(61) + LATENESS + defaultDetectorConfig().silenceMinMillis);
    expect(settledAt).toBeLessThanOrEqual(
      at(61) + LATENESS + defaultDetectorConfig().silenceMinMillis + 2000,
    );
  });

  it('settles the incident of a duplicate that was the last activity 16 s after its repeat on the clock alone, inferring nothing from the silence after it', () => {
    // Nodes a, b and c serve for a minute; k1 runs on a, again on b at second 61, and then nothing
    // arrives any more: the whole service stopped, and only the wall clock moves.
    const traffic = ['a', 'b', 'c'].flatMap((node) => activity({ node, fromSecond: 0, toSecond: 62 }));
    const repeat = server({ key: 'k1', node: 'b', store: 'B', at: 61 });
    const detector = createDetector();
    const ingested = detector.ingest(
      batch([server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 }), repeat], traffic),
    );
    expect(ingested.incidents).toMatchObject([{ keys: 1, settled: false }]);
    const events: RoutingEvent[] = [];
    let settledAt: number | undefined;
    // Ten minutes of ticks, four a second, from the second after the last activity.
    for (let now = at(62); now <= at(62 + 600); now += 250) {
      const ticked = detector.tick(now);
      events.push(...(ticked.routingEvents ?? []));
      expect(ticked.retractedRoutingEventIds).toBeUndefined();
      if (settledAt === undefined && ticked.incidents.some((incident) => incident.settled)) settledAt = now;
    }
    const { silenceMinMillis } = defaultDetectorConfig();
    // The lateness, then the silence it takes to see a node down and its bucket: 16 s.
    expect(settledAt).toBe(repeat.startUnixMillis + LATENESS + silenceMinMillis + 1000);
    // Every node fell silent, so none fell silent while the others served: no node_down, no failover.
    expect(events).toEqual([]);
    expect(detector.routingEvents()).toEqual([]);
    expect(detector.incidents()).toMatchObject([{ keys: 1, settled: true, routingEvent: null }]);
    expect(only(detector.findings())).toMatchObject({ key: 'k1', class: 'cross_store_duplicate' });
  });

  it('keeps a failover read from a backlog an hour late out of pages until the activity after its duplicate is read, through a pause shorter than the lateness', () => {
    // Node a goes down at second 60 and k1 runs again on b; it is all read an hour later, a second
    // of it per second of the wall clock (a restart's backlog) with a pause of 9 s after the
    // duplicate: the clock is far past every second, and the activity that shows a down is still
    // to be read when the duplicate is.
    const traffic = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 120 }),
      ...activity({ node: 'c', fromSecond: 0, toSecond: 120 }),
    ];
    const attempts = [
      server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 61 }),
    ];
    const detector = createDetector();
    const settled: Incident[] = [];
    let wall = at(3600);
    for (let s = 0; s < 120; s++) {
      const arriving = attempts.filter(
        (a) => Math.floor((a.startUnixMillis - TEST_EPOCH_UNIX_MILLIS) / 1000) === s,
      );
      const ingested = detector.ingest(batch(arriving, second(traffic, s)));
      settled.push(...ingested.incidents.filter((incident) => incident.settled));
      for (let tick = s === 61 ? 10 : 1; tick > 0; tick--) {
        wall += 1000;
        settled.push(...detector.tick(wall).incidents.filter((incident) => incident.settled));
      }
    }
    // One incident settled, the failover's: never a time-bucket incident paged first.
    expect(new Set(settled.map((incident) => incident.id)).size).toBe(1);
    expect(settled[0]!.routingEvent).toMatchObject({ type: 'node_down', node: 'a' });
  });

  it('retracts a node_down that the node’s late activity disproves, and regroups its duplicates', () => {
    const traffic = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 120 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 120 }),
      ...activity({ node: 'c', fromSecond: 0, toSecond: 120 }),
    ];
    const late = (x: NodeActivity) =>
      x.placement.node === 'a' && x.bucketStartUnixMillis >= at(60) && x.bucketStartUnixMillis < at(70);
    const detector = createDetector();
    detector.ingest(
      batch(
        [
          server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 }),
          server({ key: 'k1', node: 'b', store: 'B', at: 61 }),
        ],
        traffic.filter((x) => !late(x)),
      ),
    );
    const before = detector.tick(at(200));
    const [event] = before.routingEvents!;
    expect(event).toMatchObject({ type: 'node_down', node: 'a' });
    const failoverIncident = detector.incidents()[0]!;
    expect(failoverIncident.routingEvent?.id).toBe(event!.id);

    detector.ingest(batch([], traffic.filter(late)));
    const after = detector.tick(at(201));
    expect(after.retractedRoutingEventIds).toEqual([event!.id]);
    expect(detector.routingEvents()).toEqual([]);
    expect(after.retractedIncidentIds).toEqual([failoverIncident.id]);
    expect(after.incidents).toMatchObject([{ routingEvent: null, keys: 1, settled: true }]);
    expect(only(detector.findings()).routing.event).toBeNull();
  });

  it('forgets a node_down past the retry horizon without retracting it', () => {
    const horizonSeconds = defaultDetectorConfig().retryHorizonMillis / 1000;
    const traffic = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'a', fromSecond: 70, toSecond: 120 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 120 }),
      ...activity({ node: 'c', fromSecond: 0, toSecond: 120 }),
    ];
    const detector = createDetector();
    detector.ingest(batch([], traffic));
    const [event] = detector.tick(at(200)).routingEvents!;
    expect(event).toMatchObject({ type: 'node_down', node: 'a' });

    // A day and more later the service serves again: the event is past the horizon.
    const later = horizonSeconds + 300;
    detector.ingest(
      batch(
        [],
        ['b', 'c'].flatMap((node) => activity({ node, fromSecond: later, toSecond: later + 1 })),
      ),
    );
    const retracted: string[] = [];
    for (const now of [at(later + 20), at(later + 21)])
      retracted.push(...(detector.tick(now).retractedRoutingEventIds ?? []));
    expect(detector.routingEvents().map((e) => e.id)).not.toContain(event!.id);
    expect(retracted).toEqual([]);
  });
});

describe('bounded memory', () => {
  it('evicts least recently used keys and still finds a duplicate whose first execution was evicted', () => {
    const detector = createDetector({ ...defaultDetectorConfig(), maxKeys: 100 });
    detector.ingest(batch([server({ key: 'early', store: 'A', at: 0 })]));
    for (let i = 0; i < 500; i++) detector.ingest(batch([server({ key: `filler-${i}`, store: 'A', at: 1 })]));
    expect(detector.stats().keysInMemory).toBeLessThanOrEqual(100);
    expect(detector.stats().evictedKeys).toBeGreaterThan(0);
    const changes = detector.ingest(batch([server({ key: 'early', store: 'B', at: 3 })]));
    expect(changes.findings.map((f) => f.class)).toEqual(['cross_store_duplicate']);
    expect(detector.stats().rebuiltKeys).toBe(1);
  });

  it('forgets the names of nodes and tenants no key in memory uses, and still finds duplicates after', () => {
    const detector = createDetector({ ...defaultDetectorConfig(), maxKeys: 1_000 });
    detector.ingest(batch([server({ key: 'kept', node: 'node-kept', store: 'A', at: 0, tenant: 't-kept' })]));
    // Pods replaced at every deploy, each serving a key for one tenant: 200,000 names in all.
    for (let i = 0; i < 100_000; i += 500) {
      detector.ingest(
        batch(
          Array.from({ length: 500 }, (_, j) =>
            server({ key: `k-${i + j}`, node: `pod-${i + j}`, store: 'A', at: 1, tenant: `t-${i + j}` }),
          ),
        ),
      );
      // Keep the first key in memory, so its names must survive every compaction.
      if (i % 50_000 === 0) detector.ingest(batch([client({ key: 'kept', at: 1 })]));
    }
    expect(detector.stats().internedNames).toBeLessThan(140_000);
    const changes = detector.ingest(
      batch([server({ key: 'kept', node: 'node-other', store: 'B', at: 2, tenant: 't-kept' })]),
    );
    expect(changes.findings.map((f) => f.class)).toEqual(['cross_store_duplicate']);
  });

  it('finds a duplicate across a restart from the attempt log alone', () => {
    const log = createMemoryAttemptLog();
    createDetector(defaultDetectorConfig(), { attemptLog: log }).ingest(
      batch([server({ key: 'k1', store: 'A', at: 0 })]),
    );
    const restarted = createDetector(defaultDetectorConfig(), { attemptLog: log });
    const changes = restarted.ingest(batch([server({ key: 'k1', store: 'B', at: 2 })]));
    expect(changes.findings.map((f) => f.class)).toEqual(['cross_store_duplicate']);
  });

  it('re-infers a failover and keeps the scope report across a restart from its snapshot', () => {
    const traffic = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 120 }),
    ];
    const log = createMemoryAttemptLog();
    const before = createDetector(defaultDetectorConfig(), { attemptLog: log });
    before.ingest(
      batch([server({ key: 'k1', node: 'a', store: 'A', at: 58, durationMillis: 1900 })], traffic),
    );
    const restarted = createDetector(defaultDetectorConfig(), { attemptLog: log });
    restarted.restore({ findings: [], activity: traffic, scopeState: before.scopeState() });
    const changes = restarted.ingest(batch([server({ key: 'k1', node: 'b', store: 'B', at: 61 })]));
    expect(changes.findings[0]!.routing.event?.type).toBe('node_down');
    expect(restarted.scopeReport()[0]).toMatchObject({ keys: 1, keysSpanning: { nodes: 1 } });
  });

  it('counts into the restored scope report once restored, even at a tier it counted before the restore', () => {
    const before = createDetector();
    before.ingest(batch([server({ key: 'k1', node: 'a', at: 0 }), server({ key: 'k2', node: 'a', at: 1 })]));
    const detector = createDetector();
    detector.ingest(batch([server({ key: 'k3', node: 'a', at: 0 })]));
    detector.restore({ findings: [], scopeState: before.scopeState() });
    detector.ingest(batch([server({ key: 'k4', node: 'a', at: 2 })]));
    // The restored row, two keys, and the key that came after: the key before the restore is not in it.
    expect(detector.scopeReport()[0]).toMatchObject({ keys: 3 });
  });

  it('retracts after a restart a finding reported before it, once restored', () => {
    const log = createMemoryAttemptLog();
    const before = createDetector(defaultDetectorConfig(), { attemptLog: log });
    before.ingest(
      batch([
        server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
        server({ key: 'k1', node: 'b', store: 'B', outcome: 'error', at: 1 }),
      ]),
    );
    const violation = before.findings()[0]!;
    const restarted = createDetector(defaultDetectorConfig(), { attemptLog: log });
    restarted.restore({ findings: before.findings() });
    const changes = restarted.ingest(batch([server({ key: 'k1', node: 'b', store: 'B', at: 4 })]));
    expect(changes.retractedFindingIds).toEqual([violation.id]);
    expect(restarted.findings().map((f) => f.class)).toEqual(['cross_store_duplicate']);
  });
});

describe('expiry past the retry horizon alone', () => {
  const horizon = defaultDetectorConfig().retryHorizonMillis;

  it('forgets keys, their attempts and findings past the horizon, and resolves and closes nothing', () => {
    const log = createCompactAttemptLog();
    const detector = createDetector(defaultDetectorConfig(), { attemptLog: log });
    const traffic = activity({ node: 'a', fromSecond: 0, toSecond: 30 });
    detector.ingest(
      batch([server({ key: 'k1', store: 'A', at: 0 }), server({ key: 'k1', store: 'B', at: 2 })], traffic),
    );
    detector.ingest(batch([server({ key: 'k2', store: 'A', at: 10 })]));
    const [finding] = detector.findings();
    expect(log.stats()).toMatchObject({ keys: 2, attempts: 3 });

    // k1 was last seen at second 2.1, k2 at 10.1.
    const changes = detector.expire(TEST_EPOCH_UNIX_MILLIS + 5_000 + horizon);
    expect(changes).toEqual({
      findings: [],
      retractedFindingIds: [],
      incidents: [],
      retractedIncidentIds: [],
    });
    expect(detector.stats().keysInMemory).toBe(1);
    expect(log.stats()).toMatchObject({ keys: 1, attempts: 1 });
    expect(detector.findings()).toEqual([]);
    // A tick this late would resolve the incident and infer from the activity it closes.
    expect(detector.incidents().map((i) => [i.id, i.status])).toEqual([[finding!.incidentId, 'open']]);
    expect(detector.flush().routingEvents ?? []).toEqual([]);
  });

  it('changes nothing while every key was seen within the horizon', () => {
    const attempts = [
      client({ key: 'k1', at: 0 }),
      server({ key: 'k1', node: 'a', store: 'A', at: 0, durationMillis: 1900 }),
      client({ key: 'k1', at: 2, resendCount: 1 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 2.1 }),
      server({ key: 'k2', node: 'a', store: 'A', at: 30 }),
      server({ key: 'k2', node: 'a', store: 'A', outcome: 'hit', at: 31 }),
    ];
    const traffic = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 120 }),
    ];
    const plain = createDetector();
    const expiring = createDetector();
    for (const [i, attempt] of attempts.entries()) {
      const slice = traffic.filter(
        (sample) => Math.floor((sample.bucketStartUnixMillis - TEST_EPOCH_UNIX_MILLIS) / 20_000) === i,
      );
      const delivered = batch([attempt], slice);
      const changes = plain.ingest(delivered);
      expect(expiring.ingest(delivered)).toEqual(changes);
      const now = expiring.stats().watermarkUnixMillis;
      expect(expiring.expire(now)).toEqual({
        findings: [],
        retractedFindingIds: [],
        incidents: [],
        retractedIncidentIds: [],
      });
    }
    expect(expiring.flush()).toEqual(plain.flush());
    expect(expiring.findings()).toEqual(plain.findings());
    expect(expiring.incidents()).toEqual(plain.incidents());
    expect(expiring.findings().length).toBeGreaterThan(0);
  });

  it('judges a large key whose judgement was deferred before forgetting it', () => {
    const detector = createDetector();
    // 80 attempts of one store: judged (no finding) as they come.
    detector.ingest(
      batch(
        Array.from({ length: 80 }, (_, i) =>
          server({ key: 'big', store: 'A', outcome: i === 0 ? 'miss' : 'hit', at: i / 10 }),
        ),
      ),
    );
    // Another store executes it: with fewer than twice its attempts since, judged by the next tick.
    expect(detector.ingest(batch([server({ key: 'big', store: 'B', at: 9 })])).findings).toEqual([]);
    const changes = detector.expire(TEST_EPOCH_UNIX_MILLIS + 10_000 + horizon);
    expect(changes.findings.map((f) => [f.key, f.class])).toEqual([['big', 'cross_store_duplicate']]);
    expect(detector.stats().keysInMemory).toBe(0);
  });
});

describe('scope report', () => {
  it('reports declared node scope, keys spanning nodes and cluster as the smallest covering scope', () => {
    const detector = run([
      arrival({ key: 'k1', node: 'a', at: 0 }),
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', outcome: 'error', at: 2 }),
      server({ key: 'k2', node: 'a', store: 'A', at: 3 }),
      server({ key: 'k3', node: 'b', store: 'B', at: 3 }),
    ]);
    const [row] = detector.scopeReport();
    expect(row).toMatchObject({
      service: 'payments',
      operation: '/payments',
      declaredScope: 'node',
      keys: 3,
      keysSpanning: { nodes: 1, clusters: 0, regions: 0 },
      smallestCoveringScope: 'cluster',
      keysAtRisk: 1,
      status: 'narrower',
    });
  });
});

describe('advice', () => {
  it('names the smallest covering scope rather than global for retries within a cluster', () => {
    const detector = run([
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 2 }),
    ]);
    const advice = detector.incidents()[0]!.advice;
    expect(advice).toContain('cluster scope');
    expect(advice).not.toMatch(/to global/);
  });

  it('warns against a global namespace and suggests pinning when retries crossed regions', () => {
    const detector = run([
      server({ key: 'k1', node: 'a', region: 'eu', store: 'A', scope: 'region', at: 0 }),
      server({ key: 'k1', node: 'b', region: 'us', store: 'B', scope: 'region', at: 2 }),
    ]);
    const advice = detector.incidents()[0]!.advice;
    expect(advice).toMatch(/pinning/);
    expect(advice).toMatch(/cross-region write/);
  });
});

/** A latency histogram of `spans` spans lasting `millis` each. */
function lasting(millis: number, spans = 10): number[] {
  const counts = emptyLatency();
  counts[latencyBucketOf(millis)] = spans;
  return counts;
}

describe('latency spikes', () => {
  // Nodes a, b, c answer in 0.3 s; from second 30 to 45 node a answers in 2.4 s.
  const brownout = [
    ...activity({ node: 'a', fromSecond: 0, toSecond: 30, latency: lasting(300) }),
    ...activity({ node: 'a', fromSecond: 30, toSecond: 45, latency: lasting(2_400) }),
    ...activity({ node: 'a', fromSecond: 45, toSecond: 60, latency: lasting(300) }),
    ...activity({ node: 'b', fromSecond: 0, toSecond: 60, latency: lasting(300) }),
    ...activity({ node: 'c', fromSecond: 0, toSecond: 60, latency: lasting(300) }),
  ];

  function spans(events: RoutingEvent[]) {
    return events.map((e) => [
      e.type,
      e.node,
      e.startUnixMillis - TEST_EPOCH_UNIX_MILLIS,
      e.endUnixMillis - TEST_EPOCH_UNIX_MILLIS,
    ]);
  }

  it('infers a latency_spike on a node that became slower than its past and its other nodes', () => {
    const events = run([], brownout).routingEvents();
    expect(spans(events)).toEqual([['latency_spike', 'a', 30_000, 45_000]]);
    // The figures a dashboard shows: every span of a took 0.5 s or more (the lowest bound its peers'
    // 0.3 s spans never reached) over 00:00:30–00:00:45, none of its peers' and none of its own before.
    const clock = (second: number) =>
      new Date(TEST_EPOCH_UNIX_MILLIS + second * 1000).toISOString().slice(11, 19);
    expect(events[0]!.description).toBe(
      `100% of payments server spans on node a took 0.5 s or more in ${clock(30)}–${clock(
        45,
      )} UTC (15 s), against 0% on its other nodes and 0% in its 30 s before`,
    );
  });

  it('infers none when every node of the service slowed together', () => {
    const slowEverywhere = ['a', 'b', 'c'].flatMap((node) => [
      ...activity({ node, fromSecond: 0, toSecond: 30, latency: lasting(300) }),
      ...activity({ node, fromSecond: 30, toSecond: 45, latency: lasting(2_400) }),
      ...activity({ node, fromSecond: 45, toSecond: 60, latency: lasting(300) }),
    ]);
    expect(run([], slowEverywhere).routingEvents()).toEqual([]);
  });

  it('infers none for a node that is always slower than the others', () => {
    const slowerAlways = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60, latency: lasting(2_400) }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 60, latency: lasting(300) }),
    ];
    expect(run([], slowerAlways).routingEvents()).toEqual([]);
  });

  it('infers none for a slowdown shorter than latencySpikeMinMillis', () => {
    const brief = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 30, latency: lasting(300) }),
      ...activity({ node: 'a', fromSecond: 30, toSecond: 34, latency: lasting(2_400) }),
      ...activity({ node: 'a', fromSecond: 34, toSecond: 60, latency: lasting(300) }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 60, latency: lasting(300) }),
    ];
    expect(run([], brief).routingEvents()).toEqual([]);
  });

  it('blames a duplicate whose first execution ran on the slowed node on its latency_spike', () => {
    const detector = run(
      [
        server({ key: 'k1', node: 'a', store: 'A', at: 33, durationMillis: 2_500 }),
        server({ key: 'k1', node: 'b', store: 'B', at: 35.3 }),
      ],
      brownout,
    );
    expect(only(detector.findings())).toMatchObject({
      class: 'cross_store_duplicate',
      routing: { event: { type: 'latency_spike', node: 'a' } },
    });
    expect(detector.incidents()[0]!.routingEvent?.type).toBe('latency_spike');
  });
});

describe('error spikes', () => {
  it('keeps one spike with a healthy second inside it as one event', () => {
    const spiky = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 10 }),
      ...activity({ node: 'a', fromSecond: 10, toSecond: 14, errors: 8 }),
      ...activity({ node: 'a', fromSecond: 14, toSecond: 15 }),
      ...activity({ node: 'a', fromSecond: 15, toSecond: 20, errors: 9 }),
      ...activity({ node: 'a', fromSecond: 20, toSecond: 30 }),
    ];
    const events = run([], spiky).routingEvents();
    expect(
      events.map((e) => [
        e.type,
        e.startUnixMillis - TEST_EPOCH_UNIX_MILLIS,
        e.endUnixMillis - TEST_EPOCH_UNIX_MILLIS,
      ]),
    ).toEqual([['error_spike', 10_000, 20_000]]);
  });

  it('does not mistake a quiet night spread over a few nodes for a node going down', () => {
    const quiet = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 30, spans: 3 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 30, spans: 3 }),
      // The night: one request a second for the whole service, landing on b.
      ...activity({ node: 'b', fromSecond: 30, toSecond: 40, spans: 1 }),
      ...activity({ node: 'a', fromSecond: 40, toSecond: 50, spans: 3 }),
      ...activity({ node: 'b', fromSecond: 40, toSecond: 50, spans: 3 }),
    ];
    expect(run([], quiet).routingEvents()).toEqual([]);
  });
});
