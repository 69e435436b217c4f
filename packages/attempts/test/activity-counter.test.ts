import { describe, expect, it } from 'vitest';
import { extractAttempts } from '../src/extract-attempts.ts';
import { LATENCY_BUCKETS, latencyBucketOf } from '../src/latency-histogram.ts';
import { defaultMapping, parseMapping } from '../src/mapping.ts';
import { clientSpan, internalSpan, resource, serverSpan } from '../src/testing.ts';

const nodeA = resource({ service: 'payments', instance: 'a-1', region: 'eu' });
const nodeB = resource({ service: 'payments', instance: 'b-1', region: 'eu' });

describe('node activity', () => {
  it('counts every SERVER span per placement and one-second bucket, keyed or not', () => {
    const { activity } = extractAttempts(
      [
        serverSpan({ resource: nodeA, startMillis: 10_000 }),
        serverSpan({ resource: nodeA, startMillis: 10_999, key: 'k1', outcome: 'miss' }),
        serverSpan({ resource: nodeA, startMillis: 11_000, key: 'k2' }),
        serverSpan({ resource: nodeB, startMillis: 10_500 }),
      ],
      defaultMapping(),
    );
    expect(activity.map((a) => [a.placement.node, a.bucketStartUnixMillis, a.bucketMillis, a.spans])).toEqual(
      [
        ['a-1', 10_000, 1000, 2],
        ['a-1', 11_000, 1000, 1],
        ['b-1', 10_000, 1000, 1],
      ],
    );
  });

  it('does not count CLIENT or INTERNAL spans', () => {
    const { activity } = extractAttempts(
      [
        clientSpan({ resource: nodeA, key: 'k1' }),
        internalSpan({ resource: nodeA, key: 'k1', outcome: 'miss' }),
      ],
      defaultMapping(),
    );
    expect(activity).toEqual([]);
  });

  it('counts ERROR spans and spans answered 5xx as errors, 4xx not', () => {
    const { activity } = extractAttempts(
      [
        serverSpan({ resource: nodeA, error: true }),
        serverSpan({ resource: nodeA, statusCode: 503 }),
        serverSpan({ resource: nodeA, statusCode: 500, key: 'k1', outcome: 'error' }),
        serverSpan({ resource: nodeA, statusCode: 404 }),
        serverSpan({ resource: nodeA, statusCode: 200 }),
      ],
      defaultMapping(),
    );
    expect(activity).toHaveLength(1);
    expect([activity[0]!.spans, activity[0]!.errors]).toEqual([5, 3]);
  });

  it('merges resources with equal placements into one entry', () => {
    const { activity } = extractAttempts(
      [
        serverSpan({ resource: resource({ instance: 'a-1' }) }),
        serverSpan({ resource: resource({ instance: 'a-1' }) }),
      ],
      defaultMapping(),
    );
    expect(activity).toHaveLength(1);
    expect(activity[0]!.spans).toBe(2);
  });

  it('uses the configured bucket width', () => {
    const { activity } = extractAttempts(
      [
        serverSpan({ resource: nodeA, startMillis: 59_999 }),
        serverSpan({ resource: nodeA, startMillis: 60_000 }),
      ],
      parseMapping({ activityBucketMillis: 60_000 }),
    );
    expect(activity.map((a) => [a.bucketStartUnixMillis, a.bucketMillis, a.spans])).toEqual([
      [0, 60_000, 1],
      [60_000, 60_000, 1],
    ]);
  });

  it('counts a SERVER span whose outcome was refused', () => {
    const { activity } = extractAttempts(
      [serverSpan({ resource: nodeA, key: 'k1', outcome: 'nope' })],
      defaultMapping(),
    );
    expect(activity[0]!.spans).toBe(1);
  });

  it('counts each span in the latency bucket of its duration', () => {
    const { activity } = extractAttempts(
      [
        serverSpan({ resource: nodeA, startMillis: 10_000, durationMillis: 5 }),
        serverSpan({ resource: nodeA, startMillis: 10_100, durationMillis: 300 }),
        serverSpan({ resource: nodeA, startMillis: 10_200, durationMillis: 320, key: 'k1', outcome: 'miss' }),
        serverSpan({ resource: nodeA, startMillis: 10_300, durationMillis: 2_400, statusCode: 503 }),
        serverSpan({ resource: nodeA, startMillis: 10_400, durationMillis: 45_000 }),
      ],
      defaultMapping(),
    );
    expect(activity).toHaveLength(1);
    const latency = activity[0]!.latency!;
    expect(latency).toHaveLength(LATENCY_BUCKETS);
    expect(latency.reduce((a, b) => a + b, 0)).toBe(5);
    expect(latency[latencyBucketOf(5)]).toBe(1);
    expect(latency[latencyBucketOf(300)]).toBe(2);
    expect(latency[latencyBucketOf(2_400)]).toBe(1);
    expect(latency[LATENCY_BUCKETS - 1]).toBe(1);
  });
});
