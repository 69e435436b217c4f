import { describe, expect, it } from 'vitest';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping } from '../src/mapping.ts';
import { createSpanDeduplicator } from '../src/span-deduplicator.ts';
import { clientSpan, serverSpan } from './span-builders.ts';

const TRACE = '00000000000000000000000000000001';

describe('span deduplicator', () => {
  it('reports a (trace id, span id) as seen the second time', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 100 });
    expect(deduplicator.seen(TRACE, '0000000000000001')).toBe(false);
    expect(deduplicator.seen(TRACE, '0000000000000001')).toBe(true);
    expect(deduplicator.seen(TRACE, '0000000000000002')).toBe(false);
    expect(deduplicator.seen('00000000000000000000000000000002', '0000000000000001')).toBe(false);
  });

  it('stays bounded by maxEntries however many ids it sees', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 1000 });
    let largest = 0;
    for (let i = 0; i < 100_000; i++) {
      deduplicator.seen(TRACE, i.toString(16).padStart(16, '0'));
      largest = Math.max(largest, deduplicator.size);
    }
    expect(largest).toBeLessThanOrEqual(1000);
  });

  it('remembers at least the most recent maxEntries / 2 ids and forgets old ones', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 1000 });
    const id = (i: number) => i.toString(16).padStart(16, '0');
    for (let i = 0; i < 10_000; i++) deduplicator.seen(TRACE, id(i));
    for (let i = 9_500; i < 10_000; i++) expect(deduplicator.seen(TRACE, id(i))).toBe(true);
    expect(deduplicator.seen(TRACE, id(0))).toBe(false);
  });

  it('never reports ids outside the span contract as duplicates, so no execution is hidden', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 100 });
    for (const [traceId, spanId] of [
      [TRACE, 'short'],
      ['zz' + TRACE.slice(2), '0000000000000001'],
      [TRACE, '000000000000000\u0131'],
      [TRACE, '000000000000000\u0080'],
    ] as const) {
      expect(deduplicator.seen(traceId, spanId)).toBe(false);
      expect(deduplicator.seen(traceId, spanId)).toBe(false);
    }
    expect(deduplicator.size).toBe(0);
  });

  it('keeps every id it remembered while its tables grow from their initial size', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 200_000 });
    const traceOf = (i: number) => i.toString(16).padStart(32, '0');
    // Random-looking trace ids and sequential span ids, past several doublings of a 1,024-slot start.
    for (let i = 1; i <= 50_000; i++)
      expect(deduplicator.seen(traceOf(i * 2_654_435_761), '0000000000000001')).toBe(false);
    expect(deduplicator.size).toBe(50_000);
    for (let i = 1; i <= 50_000; i++)
      expect(deduplicator.seen(traceOf(i * 2_654_435_761), '0000000000000001')).toBe(true);
    expect(deduplicator.seen(traceOf(50_001 * 2_654_435_761), '0000000000000001')).toBe(false);
  });

  it('never remembers an all-zero trace id, which the spec makes invalid', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 100 });
    const zero = '0'.repeat(32);
    expect(deduplicator.seen(zero, '0000000000000001')).toBe(false);
    expect(deduplicator.seen(zero, '0000000000000001')).toBe(false);
    expect(deduplicator.size).toBe(0);
  });

  it('reads upper-case hex as the same id as lower-case', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 100 });
    deduplicator.seen('ABCDEF' + TRACE.slice(6), '00000000000000AB');
    expect(deduplicator.seen('abcdef' + TRACE.slice(6), '00000000000000ab')).toBe(true);
  });

  it('tells apart ids that differ only in the first trace id digit', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 100 });
    deduplicator.seen('1' + TRACE.slice(1), '0000000000000001');
    expect(deduplicator.seen('2' + TRACE.slice(1), '0000000000000001')).toBe(false);
  });

  it('refuses a maxEntries below 2', () => {
    expect(() => createSpanDeduplicator({ maxEntries: 1 })).toThrow(RangeError);
    expect(() => createSpanDeduplicator({ maxEntries: 1.5 })).toThrow(RangeError);
  });

  it('makes extraction skip and count redelivered keyed spans across batches', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 100 });
    const batch = [
      serverSpan({ key: 'k1', outcome: 'miss' }),
      clientSpan({ key: 'k1' }),
      serverSpan({ key: 'k2' }),
    ];
    const first = extractAttempts(batch, defaultMapping(), deduplicator);
    const again = extractAttempts(
      [...batch, serverSpan({ key: 'k3', outcome: 'miss' })],
      defaultMapping(),
      deduplicator,
    );
    expect([first.attempts.length, first.duplicateSpans]).toEqual([3, 0]);
    expect(again.attempts.map((a) => a.key)).toEqual(['k3']);
    expect(again.duplicateSpans).toBe(3);
  });

  it('does not remember spans without a key', () => {
    const deduplicator = createSpanDeduplicator({ maxEntries: 100 });
    extractAttempts([serverSpan(), serverSpan(), clientSpan()], defaultMapping(), deduplicator);
    expect(deduplicator.size).toBe(0);
  });

  it('deduplicates nothing without a deduplicator', () => {
    const repeated = serverSpan({ key: 'k1', outcome: 'miss' });
    const result = extractAttempts([repeated, repeated], defaultMapping());
    expect([result.attempts.length, result.duplicateSpans]).toEqual([2, 0]);
  });
});
