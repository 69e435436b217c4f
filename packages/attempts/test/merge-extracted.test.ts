import { describe, expect, it } from 'vitest';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping } from '../src/mapping.ts';
import { mergeExtracted } from '../src/merge-extracted.ts';
import { clientSpan, resource, serverSpan } from '../src/testing.ts';

const mapping = defaultMapping();
const at = 1_767_225_600_000;
const nodeA = resource({ service: 'payments', instance: 'payments-a-1' });
const nodeB = resource({ service: 'payments', instance: 'payments-b-1' });

describe('merging extracted batches', () => {
  // Three payloads of one group commit: keys, node activity in two seconds, an invalid value.
  const payloads = [
    [
      serverSpan({ key: 'k1', outcome: 'miss', resource: nodeA, startMillis: at + 100 }),
      serverSpan({ resource: nodeA, startMillis: at + 200, statusCode: 503 }),
      clientSpan({ key: 'k2', resource: nodeB, startMillis: at + 300 }),
    ],
    [
      serverSpan({ resource: nodeB, startMillis: at + 400 }),
      serverSpan({ key: 'k1', outcome: 'bogus', resource: nodeB, startMillis: at + 500 }),
      serverSpan({ resource: nodeA, startMillis: at + 1_200 }),
    ],
    [serverSpan({ key: 'k2', outcome: 'miss', resource: nodeA, startMillis: at + 900 })],
  ];

  it('gives what extracting all their spans at once gives', () => {
    const batches = payloads.map((spans) => extractAttempts(spans, mapping));
    const merged = mergeExtracted(batches);
    expect(merged).toEqual(extractAttempts(payloads.flat(), mapping));
    // One sample per node and second, in order of first appearance, counts summed.
    expect(
      merged.activity.map((s) => [s.placement.node, s.bucketStartUnixMillis - at, s.spans, s.errors]),
    ).toEqual([
      ['payments-a-1', 0, 3, 1],
      ['payments-b-1', 0, 2, 0],
      ['payments-a-1', 1000, 1, 0],
    ]);
    expect(merged.attempts.map((a) => a.key)).toEqual(['k1', 'k2', 'k2']);
    expect(merged.invalid).toEqual({ outcome: 1, hit: 0, scope: 0 });
  });

  it('leaves the batches as they were', () => {
    const batches = payloads.map((spans) => extractAttempts(spans, mapping));
    const before = structuredClone(batches);
    mergeExtracted(batches);
    expect(batches).toEqual(before);
  });

  it('returns a single batch as it is', () => {
    const batch = extractAttempts(payloads[0]!, mapping);
    expect(mergeExtracted([batch])).toBe(batch);
  });
});
