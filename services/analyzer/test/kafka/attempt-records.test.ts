import { activity, arrival, client, server } from '@keyscope/testkit';
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
      arrival({ key: 'k2' }),
      client({ key: 'k3' }),
    ]) {
      expect(decodeAttemptsRecord(encodeAttemptRecord(attempt))).toEqual({ type: 'attempt', attempt });
    }
  });

  it('carries node activity with the traces message it was counted from', () => {
    const entries = [
      { source: 'otlp_spans/3', offset: 17, samples: activity({ node: 'a', fromSecond: 0, toSecond: 2 }) },
      { source: '', offset: 0, samples: [] },
    ];
    expect(decodeAttemptsRecord(encodeActivityRecord(entries))).toEqual({ type: 'activity', entries });
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
    ];
    for (const value of bad)
      expect(
        codeOf(() => decodeAttemptsRecord(value)),
        String(value),
      ).toBe('KS_KAFKA_RECORD_INVALID');
  });
});
