import { activity, arrival, client, effect, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import {
  decodeAttemptsRecord,
  encodeActivityRecord,
  encodeAttemptRecord,
} from '../../src/kafka/attempt-records.ts';

function codeOf(work: () => unknown): string | undefined {
  try {
    work();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

describe('attempts topic records', () => {
  it('carries server, arrival and client attempts unchanged', () => {
    for (const attempt of [
      server({ key: 'k1', outcome: 'hit', scope: 'cluster' }),
      server({ key: 'k1', outcome: 'hit', scope: '', outcomeFrom: 'http' }),
      arrival({ key: 'k2' }),
      client({ key: 'k3' }),
      client({ key: 'k4', statusCode: 0, error: 'timeout', keyFrom: 'child' }),
    ]) {
      expect(decodeAttemptsRecord(encodeAttemptRecord(attempt))).toEqual({ type: 'attempt', attempt });
    }
  });

  it('carries how a request ended, and side effects, unchanged', () => {
    for (const attempt of [
      server({ key: 'k1', statusCode: 503, effect: 'none', released: true, effectSpansDeclared: true }),
      arrival({ key: 'k1', statusCode: 500, effect: 'unknown' }),
      effect({ key: 'k1', failed: true }),
    ]) {
      expect(decodeAttemptsRecord(encodeAttemptRecord(attempt))).toEqual({ type: 'attempt', attempt });
    }
  });

  it('carries the business id of server attempts and arrivals, and reads a record without one as none', () => {
    for (const attempt of [
      server({ key: 'k1', businessId: 'pay_1' }),
      arrival({ key: 'k1', businessId: 'pay_2' }),
    ]) {
      expect(decodeAttemptsRecord(encodeAttemptRecord(attempt))).toEqual({ type: 'attempt', attempt });
    }
    const { businessId, ...earlier } = server({ key: 'k1', businessId: 'pay_1' });
    const record = Buffer.from(JSON.stringify({ v: 1, attempt: earlier }));
    expect(decodeAttemptsRecord(record)).toMatchObject({ attempt: { businessId: '' } });
    const wrong = Buffer.from(JSON.stringify({ v: 1, attempt: { ...earlier, businessId: 7 } }));
    expect(() => decodeAttemptsRecord(wrong)).toThrow(
      expect.objectContaining({ code: 'KS_KAFKA_RECORD_INVALID' }),
    );
  });

  it('reads a record written before attempts said how their request ended as a silent success', () => {
    const {
      statusCode,
      failed,
      effect: stated,
      released,
      effectSpansDeclared,
      ...earlier
    } = server({ key: 'k1' });
    const record = Buffer.from(JSON.stringify({ v: 1, attempt: earlier }));
    expect(decodeAttemptsRecord(record)).toMatchObject({
      attempt: { statusCode: 0, failed: false, effect: '', released: false, effectSpansDeclared: false },
    });
  });

  it('carries node activity with the traces message it was counted from', () => {
    const entries = [
      { source: 'otlp_spans/3', offset: 17, samples: activity({ node: 'a', fromSecond: 0, toSecond: 2 }) },
      { source: '', offset: 0, samples: [] },
    ];
    expect(decodeAttemptsRecord(encodeActivityRecord(entries))).toEqual({ type: 'activity', entries });
  });

  it('carries the latency histograms of node activity', () => {
    const latency = [0, 0, 0, 0, 7, 2, 0, 1, 0, 0, 0, 0];
    const entries = [
      { source: 's', offset: 3, samples: activity({ node: 'a', fromSecond: 0, toSecond: 2, latency }) },
    ];
    const decoded = decodeAttemptsRecord(encodeActivityRecord(entries));
    expect(decoded).toEqual({ type: 'activity', entries });
  });

  it('refuses records keyscope did not write with KS_KAFKA_RECORD_INVALID', () => {
    const bad = [
      null,
      Buffer.alloc(0),
      Buffer.from('not json'),
      Buffer.from('{"v":2,"attempt":{}}'),
      Buffer.from('{"v":1}'),
      Buffer.from('{"v":1,"attempt":{"kind":"server"}}'),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...server(), kind: 'other' } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...server(), outcome: 'maybe' } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...server(), key: '' } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...server(), placement: null } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...client(), statusCode: 'x' } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...client(), keyFrom: 'parent' } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...server(), outcomeFrom: 'span' } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...server(), effect: 'charged' } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...arrival(), released: 'yes' } })),
      Buffer.from(JSON.stringify({ v: 1, attempt: { ...effect(), failed: 1 } })),
      Buffer.from('{"v":1,"activity":[{"source":"s","offset":1.5,"samples":[]}]}'),
      Buffer.from(
        JSON.stringify({
          v: 1,
          activity: [
            {
              source: 's',
              offset: 1,
              samples: [{ ...activity({ fromSecond: 0, toSecond: 1 })[0], bucketMillis: 0 }],
            },
          ],
        }),
      ),
      ...[[1, 2, 3], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1], 'many'].map((latency) =>
        Buffer.from(
          JSON.stringify({
            v: 1,
            activity: [
              {
                source: 's',
                offset: 1,
                samples: [{ ...activity({ fromSecond: 0, toSecond: 1 })[0], latency }],
              },
            ],
          }),
        ),
      ),
    ];
    for (const value of bad)
      expect(
        codeOf(() => decodeAttemptsRecord(value)),
        String(value),
      ).toBe('KS_KAFKA_RECORD_INVALID');
  });
});
