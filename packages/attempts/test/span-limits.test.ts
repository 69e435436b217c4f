import type { Span } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import type { ClientAttempt, ServerAttempt } from '../src/attempt.ts';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping, parseMapping } from '../src/mapping.ts';
import { exceedsBytes, type SpanLimits, truncateToBytes } from '../src/span-limits.ts';
import { clientSpan, resource, serverSpan } from '../src/testing.ts';

const mapping = defaultMapping();
const NOW = 1_700_000_000_000;
const limits: SpanLimits = {
  notBeforeUnixMillis: NOW - 60_000,
  notAfterUnixMillis: NOW + 1_000,
  maxKeyBytes: 16,
  maxNameBytes: 12,
  maxValueBytes: 8,
};

const timed = (startMillis: number, endMillis: number, key?: string): Span => {
  const span = serverSpan({ key, outcome: key === undefined ? undefined : 'miss', startMillis });
  return { ...span, endTimeUnixMillis: endMillis };
};

describe('extraction under span limits', () => {
  it('refuses spans outside the time window or ending before they start, with or without a key', () => {
    const result = extractAttempts(
      [
        timed(NOW - 100, NOW - 50, 'k-good'),
        timed(0, NOW - 50, 'k-zero'),
        timed(NOW - 100, 18_446_744_073_709.551),
        timed(18_446_744_073_709.551, NOW, 'k-far'),
        timed(NOW - 100, 0),
        timed(NOW - 100, Number.NaN, 'k-nan'),
      ],
      mapping,
      limits,
    );
    expect(result.attempts.map((a) => a.key)).toEqual(['k-good']);
    expect(result.refusals.byCode).toEqual({
      KS_SPAN_TOO_OLD: 1,
      KS_SPAN_IN_FUTURE: 3,
      KS_SPAN_ENDS_BEFORE_START: 1,
    });
    expect(result.refusals.total).toBe(5);
    expect(result.refusals.firstMessage).toMatch(/^KS_SPAN_TOO_OLD: span [0-9a-f]{32}\/[0-9a-f]{16}: /);
    // Only the accepted span counts as node activity: no bucket at 1970 or in the year 586 000.
    expect(result.activity.map((a) => [a.bucketStartUnixMillis, a.spans])).toEqual([[NOW - 1_000, 1]]);
  });

  it('takes spans at the window edges', () => {
    const result = extractAttempts(
      [timed(limits.notBeforeUnixMillis, limits.notAfterUnixMillis, 'k1'), timed(NOW, NOW, 'k2')],
      mapping,
      limits,
    );
    expect(result.attempts).toHaveLength(2);
    expect(result.refusals.total).toBe(0);
    expect(result.refusals.firstMessage).toBe('');
  });

  it('refuses a key longer than maxKeyBytes, counting UTF-8 bytes, and keeps one at the limit', () => {
    const result = extractAttempts(
      [
        serverSpan({ key: 'k'.repeat(16), outcome: 'miss', startMillis: NOW }),
        serverSpan({ key: 'k'.repeat(17), outcome: 'miss', startMillis: NOW }),
        // 6 characters, 18 bytes.
        clientSpan({ key: '€€€€€€', startMillis: NOW }),
      ],
      mapping,
      limits,
    );
    expect(result.attempts.map((a) => a.key)).toEqual(['k'.repeat(16)]);
    expect(result.refusals.byCode).toEqual({ KS_SPAN_KEY_TOO_LONG: 2 });
    // A refused keyed SERVER span is no node activity either.
    expect(result.activity.reduce((sum, a) => sum + a.spans, 0)).toBe(1);
  });

  it('refuses spans whose placement, tenant or store names are longer than maxNameBytes', () => {
    const longService = resource({ service: 's'.repeat(13) });
    const result = extractAttempts(
      [
        serverSpan({ startMillis: NOW, resource: longService }),
        serverSpan({ key: 'k1', outcome: 'miss', startMillis: NOW, resource: longService }),
        serverSpan({ key: 'k2', outcome: 'miss', startMillis: NOW, tenant: 't'.repeat(13) }),
        serverSpan({ key: 'k3', outcome: 'miss', startMillis: NOW, store: 'r'.repeat(13) }),
        serverSpan({ key: 'k4', outcome: 'miss', startMillis: NOW, store: 'r'.repeat(12) }),
      ],
      mapping,
      limits,
    );
    expect(result.attempts.map((a) => a.key)).toEqual(['k4']);
    expect(result.refusals.byCode).toEqual({ KS_SPAN_NAME_TOO_LONG: 4 });
    expect(result.refusals.firstMessage).toContain('the service name must be at most 12 bytes');
    expect(result.activity.map((a) => [a.placement.service, a.spans])).toEqual([['payments', 1]]);
  });

  it('cuts an over-long operation, target and error at a character boundary and keeps the span', () => {
    const result = extractAttempts(
      [
        serverSpan({ key: 'k1', outcome: 'miss', startMillis: NOW, route: '/payments/é/capture' }),
        clientSpan({
          key: 'k1',
          name: 'POST',
          startMillis: NOW,
          attributes: { 'server.address': 'payments.internal', 'error.type': 'ééééé' },
        }),
      ],
      mapping,
      limits,
    );
    const [server, client] = result.attempts as [ServerAttempt, ClientAttempt];
    expect(server.operation).toBe('/payments/é');
    expect(client.target).toBe('payments');
    expect(client.error).toBe('éééé');
    expect(result.refusals).toMatchObject({ total: 0, truncatedValues: 3 });
  });

  it('cuts an over-long business id and keeps the span', () => {
    const result = extractAttempts(
      [
        serverSpan({
          key: 'k1',
          outcome: 'miss',
          route: '/p',
          startMillis: NOW,
          attributes: { 'payment.id': 'pay_éééé' },
        }),
      ],
      parseMapping({ fields: { businessId: ['payment.id'] } }),
      limits,
    );
    expect((result.attempts[0] as ServerAttempt).businessId).toBe('pay_éé');
    expect(result.refusals).toMatchObject({ total: 0, truncatedValues: 1 });
  });

  it('reports nothing about refusals without limits, and refuses nothing', () => {
    const result = extractAttempts([timed(0, 0, 'k1')], mapping);
    expect(result.attempts).toHaveLength(1);
    expect(result).not.toHaveProperty('refusals');
  });
});

describe('byte lengths', () => {
  it('measures UTF-8 bytes, settling most strings by their length', () => {
    expect(exceedsBytes('abc', 3)).toBe(false);
    expect(exceedsBytes('abcd', 3)).toBe(true);
    expect(exceedsBytes('é', 1)).toBe(true);
    expect(exceedsBytes('é', 2)).toBe(false);
    expect(exceedsBytes('🚀', 3)).toBe(true);
    expect(exceedsBytes('🚀', 4)).toBe(false);
  });

  it('cuts without splitting a character', () => {
    expect(truncateToBytes('aé', 2)).toBe('a');
    expect(truncateToBytes('a🚀b', 4)).toBe('a');
    expect(truncateToBytes('a🚀b', 5)).toBe('a🚀');
    expect(truncateToBytes('x'.repeat(10_000_000), 3)).toBe('xxx');
  });
});
