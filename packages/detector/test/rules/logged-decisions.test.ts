import { defaultMapping, extractAttempts } from '@keyscope/attempts';
import type { Span } from '@keyscope/otlp';
import { type LogRecord, spansOfLogRecords } from '@keyscope/otlp';
import {
  attributes,
  hexId,
  internalSpan,
  resource,
  serverSpan,
  TEST_EPOCH_UNIX_MILLIS,
} from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { createDetector, defaultDetectorConfig } from '../../src/index.ts';

const nodeA = resource({ service: 'payments', instance: 'payments-a-1' });
const nodeB = resource({ service: 'payments', instance: 'payments-b-1' });

/** A log record stating a dedup decision, as the logs decoders give it. */
function decisionLog(options: {
  key: string;
  outcome: string;
  store: string;
  at?: number;
  traceId?: string;
  spanId?: string;
  resource?: LogRecord['resource'];
}): LogRecord {
  return {
    traceId: options.traceId ?? '',
    spanId: options.spanId ?? '',
    timeUnixMillis: TEST_EPOCH_UNIX_MILLIS + (options.at ?? 0),
    observedTimeUnixMillis: 0,
    severityNumber: 9,
    severityText: 'INFO',
    body: `idempotency decision: ${options.outcome}`,
    eventName: '',
    attributes: attributes({
      'idempotency.key': options.key,
      'idempotency.outcome': options.outcome,
      'idempotency.store': options.store,
      'http.route': '/payments',
    }),
    resource: options.resource ?? nodeA,
    scope: { name: 'payments-dedup', version: '1' },
  };
}

/** The findings of one batch holding these spans and log records. */
function findingsOf(spans: Span[], logs: LogRecord[]) {
  const detector = createDetector(defaultDetectorConfig());
  detector.ingest(extractAttempts([...spans, ...spansOfLogRecords(logs)], defaultMapping()));
  detector.flush();
  return detector.findings();
}

const trace1 = hexId(1, 32);
const trace2 = hexId(2, 32);

describe('decisions recorded in log records', () => {
  it('finds a duplicate recorded only in logs: two decisions in two node stores', () => {
    const findings = findingsOf(
      [],
      [
        decisionLog({ key: 'k1', outcome: 'miss', store: 'node-a' }),
        decisionLog({ key: 'k1', outcome: 'miss', store: 'node-b', at: 2100, resource: nodeB }),
      ],
    );
    expect(findings.map((f) => [f.class, f.executions])).toEqual([['cross_store_duplicate', 2]]);
  });

  it('counts a decision recorded as a span and as a log record inside it once', () => {
    const decision = serverSpan({
      key: 'k1',
      outcome: 'miss',
      store: 'node-a',
      route: '/payments',
      traceId: trace1,
      spanId: hexId(0x11, 16),
      resource: nodeA,
    });
    const logged = decisionLog({
      key: 'k1',
      outcome: 'miss',
      store: 'node-a',
      traceId: trace1,
      spanId: decision.spanId,
    });
    expect(findingsOf([decision], [logged])).toEqual([]);
  });

  it('counts a decision span and the decision logged in its request span once', () => {
    const request = serverSpan({
      key: 'k1',
      route: '/payments',
      traceId: trace1,
      spanId: hexId(0x21, 16),
      resource: nodeA,
    });
    const decision = internalSpan({
      key: 'k1',
      outcome: 'miss',
      store: 'node-a',
      route: '/payments',
      traceId: trace1,
      spanId: hexId(0x22, 16),
      parentSpanId: request.spanId,
      resource: nodeA,
    });
    const logged = decisionLog({
      key: 'k1',
      outcome: 'miss',
      store: 'node-a',
      traceId: trace1,
      spanId: request.spanId,
    });
    expect(findingsOf([request, decision], [logged])).toEqual([]);
  });

  it('counts each execution once when one node records it as span and log and another only logs it', () => {
    const decision = serverSpan({
      key: 'k1',
      outcome: 'miss',
      store: 'node-a',
      route: '/payments',
      traceId: trace1,
      spanId: hexId(0x31, 16),
      resource: nodeA,
    });
    const findings = findingsOf(
      [decision],
      [
        decisionLog({
          key: 'k1',
          outcome: 'miss',
          store: 'node-a',
          traceId: trace1,
          spanId: decision.spanId,
        }),
        decisionLog({
          key: 'k1',
          outcome: 'miss',
          store: 'node-b',
          at: 2100,
          traceId: trace2,
          resource: nodeB,
        }),
      ],
    );
    expect(findings.map((f) => [f.class, f.executions, f.stores])).toEqual([
      ['cross_store_duplicate', 2, ['node-a', 'node-b']],
    ]);
  });

  it('reads the decision logged in a request span that only carries the key', () => {
    const request = serverSpan({
      key: 'k1',
      route: '/payments',
      traceId: trace1,
      spanId: hexId(0x41, 16),
      resource: nodeA,
    });
    const findings = findingsOf(
      [request],
      [
        decisionLog({ key: 'k1', outcome: 'miss', store: 'node-a', traceId: trace1, spanId: request.spanId }),
        decisionLog({ key: 'k1', outcome: 'miss', store: 'node-b', at: 2100, resource: nodeB }),
      ],
    );
    expect(findings.map((f) => [f.class, f.executions])).toEqual([['cross_store_duplicate', 2]]);
  });
});
