import { createAttributes, type LogRecord, logRecordSpan } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping } from '../src/index.ts';
import { isLoggedDecision, withoutRepeatedLogDecisions } from '../src/logged-decisions.ts';
import { hexId, internalSpan, resource, serverSpan, TEST_EPOCH_UNIX_MILLIS } from '../src/testing.ts';

const TRACE = hexId(7, 32);

function logIn(spanId: string, traceId = TRACE): LogRecord {
  return {
    traceId,
    spanId,
    timeUnixMillis: TEST_EPOCH_UNIX_MILLIS,
    observedTimeUnixMillis: 0,
    severityNumber: 9,
    severityText: '',
    body: null,
    eventName: 'idempotency.decision',
    attributes: Object.assign(createAttributes(), { 'idempotency.key': 'k1', 'idempotency.outcome': 'miss' }),
    resource: resource(),
    scope: { name: 'dedup', version: '' },
  };
}

const attemptsOf = (...spans: ReturnType<typeof serverSpan>[]) =>
  extractAttempts(spans, defaultMapping()).attempts;

describe('logged decisions', () => {
  it('extracts a log record stating a key and an outcome as a server attempt, one without an outcome as none', () => {
    const [attempt] = attemptsOf(logRecordSpan(logIn(hexId(1, 16))));
    expect(attempt).toMatchObject({ kind: 'server', key: 'k1', outcome: 'miss', parentSpanId: hexId(1, 16) });
    const noOutcome = logIn(hexId(1, 16));
    delete noOutcome.attributes['idempotency.outcome'];
    expect(extractAttempts([logRecordSpan(noOutcome)], defaultMapping())).toMatchObject({
      attempts: [],
      activity: [],
    });
  });

  it('tells the attempt of a logged decision from a span decision', () => {
    const [logged] = attemptsOf(logRecordSpan(logIn(hexId(1, 16))));
    const [span] = attemptsOf(
      internalSpan({ key: 'k1', outcome: 'miss', traceId: TRACE, parentSpanId: hexId(1, 16) }),
    );
    expect(isLoggedDecision(logged!)).toBe(true);
    expect(isLoggedDecision(span!)).toBe(false);
  });

  it('leaves out a logged decision only where a span of the same request records it', () => {
    const decision = serverSpan({ key: 'k1', outcome: 'miss', traceId: TRACE, spanId: hexId(2, 16) });
    const child = internalSpan({
      key: 'k1',
      outcome: 'miss',
      traceId: TRACE,
      spanId: hexId(3, 16),
      parentSpanId: hexId(4, 16),
    });
    const attempts = attemptsOf(
      decision,
      child,
      logRecordSpan(logIn(hexId(2, 16))), // in the decision span
      logRecordSpan(logIn(hexId(4, 16))), // in the request span of the child decision
      logRecordSpan(logIn(hexId(5, 16))), // in a span that records no decision
      logRecordSpan(logIn(hexId(2, 16), hexId(8, 32))), // another trace
    );
    const kept = withoutRepeatedLogDecisions(attempts);
    expect(kept.map((a) => [a.traceId, a.parentSpanId || a.spanId])).toEqual([
      [TRACE, hexId(2, 16)],
      [TRACE, hexId(4, 16)],
      [TRACE, hexId(5, 16)],
      [hexId(8, 32), hexId(2, 16)],
    ]);
    expect(kept).toContain(attempts[0]);
    expect(kept).toContain(attempts[1]);
  });

  it('returns the attempts as they are when none is a logged decision', () => {
    const attempts = attemptsOf(serverSpan({ key: 'k1', outcome: 'miss' }));
    expect(withoutRepeatedLogDecisions(attempts)).toBe(attempts);
  });
});
