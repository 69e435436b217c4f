import type { Attempt, ClientAttempt, ExtractedAttempts, NodeActivity } from '@keyscope/attempts';
import { activity, arrival, client, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { createDetector, type Detector, type Finding, readSend } from '../../src/index.ts';

/**
 * Executions whose spans were lost with a killed node: the marks they leave in the key's other
 * spans, read one kind at a time. Node `a` of payments serves steadily, is silent from 60 s to
 * 120 s (a `node_down`), then serves again; nodes `b` and `c` serve throughout. Each key's one
 * visible execution is its retry on node `b`.
 */
const NODE_A_DIES = [
  ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
  ...activity({ node: 'a', fromSecond: 120, toSecond: 180 }),
  ...activity({ node: 'b', fromSecond: 0, toSecond: 180 }),
  ...activity({ node: 'c', fromSecond: 0, toSecond: 180 }),
];
const STEADY = [
  ...activity({ node: 'a', fromSecond: 0, toSecond: 180 }),
  ...activity({ node: 'b', fromSecond: 0, toSecond: 180 }),
  ...activity({ node: 'c', fromSecond: 0, toSecond: 180 }),
];

function batch(attempts: Attempt[], nodeActivity: NodeActivity[] = []): ExtractedAttempts {
  return { attempts, activity: nodeActivity, invalid: { outcome: 0, hit: 0, scope: 0 } };
}

function run(attempts: Attempt[], nodeActivity: NodeActivity[] = NODE_A_DIES): Detector {
  const detector = createDetector();
  detector.ingest(batch(attempts, nodeActivity));
  detector.flush();
  return detector;
}

function only(findings: Finding[]): Finding {
  expect(findings).toHaveLength(1);
  return findings[0]!;
}

const TRACE = '00000000000000000000000000000a01';

/** The caller's send of k1 at `at` seconds (in one trace), which ended `durationMillis` later. */
function send(at: number, durationMillis: number, outcome: Partial<ClientAttempt> = {}): ClientAttempt {
  return client({
    key: 'k1',
    traceId: TRACE,
    at,
    durationMillis,
    target: 'payments.internal:8443',
    ...outcome,
  });
}

/** The retry that executed on node b at `at` seconds (62 s unless told), under its own send. */
function retryOnB(at = 62): Attempt[] {
  const retry = send(at, 900, { spanId: '00000000000000b1', statusCode: 201, resendCount: 1 });
  const request = arrival({
    key: 'k1',
    traceId: TRACE,
    node: 'b',
    parentSpanId: retry.spanId,
    spanId: '00000000000000b2',
    at: at + 0.001,
    durationMillis: 880,
    statusCode: 201,
  });
  const decision = server({
    key: 'k1',
    traceId: TRACE,
    node: 'b',
    parentSpanId: request.spanId,
    at: at + 0.002,
    durationMillis: 2,
  });
  return [retry, request, decision];
}

describe('a send whose connection was reset', () => {
  it('suspects a second execution, strongly, when the reset came as a node of the service went silent', () => {
    const reset = send(59.4, 700, { statusCode: 0, error: 'ECONNRESET' });
    const detector = run([reset, ...retryOnB()]);
    const finding = only(detector.findings());
    expect(finding).toMatchObject({
      class: 'suspected_duplicate',
      cause: 'execution_unseen',
      severity: 'high',
      executions: 1,
      service: 'payments',
      operation: '/payments',
    });
    const event = detector.routingEvents().find((e) => e.type === 'node_down' && e.node === 'a')!;
    expect(finding.routing.event?.id).toBe(event.id);
    expect(finding.suspicion).toEqual({
      strength: 'strong',
      evidence: [
        {
          kind: 'send_reset',
          strength: 'strong',
          traceId: reset.traceId,
          spanId: reset.spanId,
          atUnixMillis: reset.startUnixMillis,
          node: 'a',
          store: '',
          routingEventId: event.id,
        },
      ],
    });
    const incidents = detector.incidents();
    expect(incidents).toHaveLength(1);
    expect(incidents[0]).toMatchObject({
      class: 'suspected_duplicate',
      severity: 'high',
      routingEvent: { id: event.id },
      keys: 1,
    });
    expect(incidents[0]!.advice).toContain('Check these keys against');
  });

  it('calls a reset while every node kept serving moderate evidence, blamed on no event', () => {
    const reset = send(59.4, 700, { statusCode: 0, error: 'socket hang up' });
    const finding = only(run([reset, ...retryOnB()], STEADY).findings());
    expect(finding.cause).toBe('execution_unseen');
    expect(finding.routing.event).toBeNull();
    expect(finding.suspicion).toMatchObject({
      strength: 'moderate',
      evidence: [{ kind: 'send_reset', strength: 'moderate', routingEventId: null, node: '' }],
    });
  });

  it('judges a reset send by the span under it when one landed', () => {
    const reset = send(59.4, 700, { statusCode: 0, error: 'ECONNRESET' });
    const replay = server({
      key: 'k1',
      traceId: TRACE,
      node: 'c',
      parentSpanId: reset.spanId,
      at: 59.401,
      outcome: 'hit',
    });
    // Its landing answered `hit`: read by the usual rules, the key reached two stores, ran once.
    expect(
      run([reset, replay, ...retryOnB()])
        .findings()
        .map((f) => f.class),
    ).toEqual(['scope_violation']);
  });
});

describe('a send that got no answer', () => {
  it('suspects a second execution when a node of the service went silent while it waited', () => {
    const timedOut = send(58.5, 2000, { statusCode: 0, error: 'timeout' });
    const finding = only(run([timedOut, ...retryOnB()]).findings());
    expect(finding.routing.event).toMatchObject({ type: 'node_down', node: 'a' });
    expect(finding.suspicion).toMatchObject({
      strength: 'strong',
      evidence: [{ kind: 'send_cut_off', spanId: timedOut.spanId, node: 'a' }],
    });
  });

  it('reads a proxy’s 504 with nothing under it as no answer', () => {
    const gatewayTimeout = send(58.5, 2000, { statusCode: 504, error: '504' });
    const finding = only(run([gatewayTimeout, ...retryOnB()]).findings());
    expect(finding.suspicion?.evidence.map((e) => e.kind)).toEqual(['send_cut_off']);
  });

  it('suspects nothing of a send that timed out into a node already silent: it most likely reached nothing', () => {
    const intoTheSilence = send(60.2, 1500, { statusCode: 0, error: 'timeout' });
    const detector = run([intoTheSilence, ...retryOnB()]);
    expect(detector.findings()).toEqual([]);
    expect(detector.incidents()).toEqual([]);
  });

  it('suspects nothing of a timeout while every node kept serving', () => {
    const timedOut = send(58.5, 2000, { statusCode: 0, error: 'timeout' });
    expect(run([timedOut, ...retryOnB()], STEADY).findings()).toEqual([]);
  });
});

describe('a proxy’s 502 or 504 with nothing under it', () => {
  // Behind nginx a node that hangs and is killed leaves no reset: nginx answers each request it had
  // forwarded to it with a 502 at the kill, seconds into the node's silence.
  it.each([502, 504])(
    'suspects a second execution when the proxy answered %i while a node fell silent as the send began',
    (statusCode) => {
      const badGateway = send(60.5, 1400, { statusCode, error: String(statusCode) });
      const finding = only(run([badGateway, ...retryOnB()]).findings());
      expect(finding.class).toBe('suspected_duplicate');
      expect(finding.cause).toBe('execution_unseen');
      expect(finding.routing.event).toMatchObject({ type: 'node_down', node: 'a' });
      expect(finding.suspicion).toMatchObject({
        strength: 'strong',
        evidence: [{ kind: 'send_lost_behind_proxy', spanId: badGateway.spanId, node: 'a' }],
      });
    },
  );

  it('suspects nothing of a 503 given as the node fell silent: the proxy had no node to send it to', () => {
    const unavailable = send(60.5, 1400, { statusCode: 503, error: '503' });
    const detector = run([unavailable, ...retryOnB()]);
    expect(detector.findings()).toEqual([]);
    expect(detector.incidents()).toEqual([]);
  });

  it('suspects nothing of a 502 to a send that began when the node had been silent for a whole silence: a partition healing', () => {
    // The default silenceMinMillis is 5 s: at 66 s node a has been silent for 6 s.
    const atHeal = send(66, 1900, { statusCode: 502, error: '502' });
    const detector = run([atHeal, ...retryOnB(70)]);
    expect(detector.findings()).toEqual([]);
    expect(detector.incidents()).toEqual([]);
  });

  it('suspects nothing of a 502 while every node kept serving', () => {
    const badGateway = send(60.5, 1400, { statusCode: 502, error: '502' });
    expect(run([badGateway, ...retryOnB()], STEADY).findings()).toEqual([]);
  });
});

describe('sends that say the request never ran', () => {
  it.each([
    ['a refused connection', { statusCode: 0, error: 'ECONNREFUSED' }],
    ['a connect timeout', { statusCode: 0, error: 'UND_ERR_CONNECT_TIMEOUT' }],
    ['an unreachable host', { statusCode: 0, error: 'connect EHOSTUNREACH 10.0.0.7:8443' }],
    ['a 503 with no server span under it', { statusCode: 503, error: '503' }],
  ])('suspects nothing after %s as the node died', (_name, outcome) => {
    const neverRan = send(59.9, 300, outcome);
    const detector = run([neverRan, ...retryOnB()]);
    expect(detector.findings()).toEqual([]);
    expect(detector.incidents()).toEqual([]);
  });

  it('reads each send by what its connection and status say', () => {
    const read = (statusCode: number, error: string) => readSend(client({ statusCode, error }));
    expect(read(0, 'ECONNREFUSED')).toBe('never_ran');
    expect(read(0, 'connect ECONNREFUSED 10.0.0.7:8443')).toBe('never_ran');
    expect(read(0, 'ENOTFOUND')).toBe('never_ran');
    expect(read(503, '503')).toBe('never_ran');
    expect(read(0, 'ECONNRESET')).toBe('reset');
    expect(read(0, 'read ECONNRESET')).toBe('reset');
    expect(read(0, 'other side closed')).toBe('reset');
    expect(read(0, 'timeout')).toBe('no_answer');
    expect(read(0, '')).toBe('no_answer');
    expect(read(502, '502')).toBe('no_answer');
    expect(read(504, '504')).toBe('no_answer');
    expect(read(201, '')).toBe('answered');
    expect(read(409, '409')).toBe('answered');
    expect(read(500, '500')).toBe('answered');
  });
});

describe('a store that answered in_progress', () => {
  it('suspects the execution that held the lock when no visible execution in that store did', () => {
    const store = 'payments/cluster:c1';
    const refused = server({ key: 'k1', node: 'b', store, scope: 'cluster', outcome: 'in_progress', at: 61 });
    const later = server({ key: 'k1', node: 'b', store, scope: 'cluster', at: 100 });
    const finding = only(run([refused, later]).findings());
    expect(finding).toMatchObject({ class: 'suspected_duplicate', cause: 'execution_unseen', executions: 1 });
    // Node a, in the store's cluster, went silent just before: where the holder most likely ran.
    expect(finding.routing.event).toMatchObject({ type: 'node_down', node: 'a' });
    expect(finding.suspicion).toMatchObject({
      strength: 'strong',
      evidence: [{ kind: 'unexplained_in_progress', spanId: refused.spanId, store, node: 'a' }],
    });
  });

  it('suspects nothing when a visible execution in that store held the key', () => {
    const first = server({ key: 'k1', node: 'a', store: 'S', scope: 'cluster', at: 10, durationMillis: 900 });
    const refused = server({
      key: 'k1',
      node: 'b',
      store: 'S',
      scope: 'cluster',
      outcome: 'in_progress',
      at: 10.2,
    });
    const replay = server({ key: 'k1', node: 'b', store: 'S', scope: 'cluster', outcome: 'hit', at: 12 });
    expect(run([first, refused, replay]).findings()).toEqual([]);
  });

  it('suspects nothing of a key that never executed in the spans', () => {
    const refused = server({
      key: 'k1',
      node: 'b',
      store: 'S',
      scope: 'cluster',
      outcome: 'in_progress',
      at: 61,
    });
    expect(run([refused]).findings()).toEqual([]);
  });
});

describe('a request that reached a node which recorded no decision', () => {
  it('suspects an execution when the node went silent as the request ended without an answer', () => {
    const unanswered = arrival({
      key: 'k1',
      traceId: TRACE,
      node: 'a',
      at: 59.5,
      durationMillis: 600,
      statusCode: 0,
    });
    const finding = only(run([unanswered, ...retryOnB().slice(1)]).findings());
    expect(finding.routing.event).toMatchObject({ type: 'node_down', node: 'a' });
    expect(finding.suspicion).toMatchObject({
      strength: 'strong',
      evidence: [{ kind: 'arrival_without_decision', spanId: unanswered.spanId, node: 'a' }],
    });
  });

  it('suspects nothing of a request refused with a 503 before admission on the node that died', () => {
    const refused = arrival({
      key: 'k1',
      traceId: TRACE,
      node: 'a',
      at: 59.5,
      durationMillis: 3,
      statusCode: 503,
    });
    expect(run([refused, ...retryOnB().slice(1)]).findings()).toEqual([]);
  });

  it('suspects nothing of a request whose node kept serving', () => {
    const unanswered = arrival({
      key: 'k1',
      traceId: TRACE,
      node: 'a',
      at: 59.5,
      durationMillis: 600,
      statusCode: 0,
    });
    expect(run([unanswered, ...retryOnB().slice(1)], STEADY).findings()).toEqual([]);
  });
});

describe('a suspect that later evidence settles', () => {
  it('retracts the suspected duplicate when the lost execution’s spans arrive after all, for the confirmed one', () => {
    const detector = createDetector();
    const reset = send(59.4, 700, { statusCode: 0, error: 'ECONNRESET' });
    const judged = detector.ingest(batch([reset, ...retryOnB()], NODE_A_DIES));
    const suspected = only(judged.findings);
    expect(suspected.class).toBe('suspected_duplicate');
    const late = server({
      key: 'k1',
      traceId: TRACE,
      node: 'a',
      parentSpanId: reset.spanId,
      at: 59.401,
      durationMillis: 2,
    });
    const confirmed = detector.ingest(batch([late]));
    expect(confirmed.findings.map((f) => f.class)).toEqual(['cross_store_duplicate']);
    expect(confirmed.retractedFindingIds).toEqual([suspected.id]);
    expect(confirmed.retractedIncidentIds).toEqual([suspected.incidentId]);
    expect(detector.findings().map((f) => f.class)).toEqual(['cross_store_duplicate']);
  });

  it('suspects a key judged before its node was known to be down once the node_down is inferred', () => {
    const detector = createDetector();
    const timedOut = send(58.5, 2000, { statusCode: 0, error: 'timeout' });
    // The key arrives first, with activity only up to the silence: no event to read it by yet.
    const before = NODE_A_DIES.filter(
      (sample) => sample.bucketStartUnixMillis < TEST_EPOCH_UNIX_MILLIS + 63_000,
    );
    expect(detector.ingest(batch([timedOut, ...retryOnB()], before)).findings).toEqual([]);
    detector.ingest(
      batch(
        [],
        NODE_A_DIES.filter((sample) => !before.includes(sample)),
      ),
    );
    const changes = detector.flush();
    expect(only(changes.findings)).toMatchObject({ class: 'suspected_duplicate', cause: 'execution_unseen' });
  });

  it('replaces a scope violation by the suspected duplicate an unexplained in_progress makes', () => {
    const detector = run([
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', outcome: 'in_progress', at: 1 }),
    ]);
    expect(only(detector.findings())).toMatchObject({
      class: 'suspected_duplicate',
      cause: 'execution_unseen',
      stores: ['A', 'B'],
    });
  });
});

describe('activity that arrives after the key it bears on', () => {
  const before = NODE_A_DIES.filter(
    (sample) => sample.placement.node === 'a' && sample.bucketStartUnixMillis < at(60),
  );
  const rest = NODE_A_DIES.filter((sample) => !before.includes(sample));

  function at(second: number): number {
    return TEST_EPOCH_UNIX_MILLIS + second * 1000;
  }

  it('suspects the unseen execution of a key judged long before the activity that shows its node went down', () => {
    const attempts = () => [send(58.5, 2000, { statusCode: 0, error: 'timeout' }), ...retryOnB()];
    const reference = only(run(attempts()).findings());
    expect(reference.routing.event).toMatchObject({ type: 'node_down', node: 'a' });

    const detector = createDetector();
    // Node a's traffic before its silence comes last: until it does, a has nothing to fall silent from.
    detector.ingest(batch([], rest));
    detector.tick(at(200));
    detector.ingest(batch(attempts()));
    // Far past the key's repeat: the activity there is closed, the lateness and detection horizon passed.
    detector.tick(at(260));
    expect(detector.routingEvents()).toEqual([]);
    detector.ingest(batch([], before));
    detector.tick(at(320));
    expect(only(detector.findings())).toMatchObject({
      id: reference.id,
      class: reference.class,
      incidentId: reference.incidentId,
      routing: { event: { id: reference.routing.event!.id } },
    });
  });
});
