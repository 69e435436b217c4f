import {
  type Attempt,
  type CheckedAttempts,
  defaultMapping,
  EARLIEST_SPAN_UNIX_MILLIS,
  type Effect,
  extractAttempts,
  type Mapping,
  type Outcome,
  parseMapping,
  partitionKey,
  type ScopeLevel,
  SendLinker,
  type SpanLimits,
} from '@keyscope/attempts';
import {
  type Scenario,
  SIDE_EFFECT_SPAN_NAME,
  scenarios,
  simulate,
  splitIntoPayloads,
} from '@keyscope/simulator';
import { arrival, client, effect, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { createCompactAttemptLog } from '../../src/index.ts';

const limits: SpanLimits = {
  notBeforeUnixMillis: EARLIEST_SPAN_UNIX_MILLIS,
  notAfterUnixMillis: Date.UTC(2100, 0, 1),
  maxKeyBytes: 256,
  maxNameBytes: 256,
  maxValueBytes: 512,
};

/**
 * Extracted and linked batches of simulated runs, attempts as analyze appends them: the benchmark
 * scenario, keyless sends behind a proxy, and side-effect spans.
 */
function simulatedBatches(): CheckedAttempts[] {
  const withEffectSpans = scenarios.releaseAfterEffect({ requests: 300 });
  withEffectSpans.services[0]!.effectConvention = 'span';
  const runs: [Scenario, Mapping][] = [
    [scenarios.benchmark({ spans: 5_000 }), defaultMapping()],
    [scenarios.proxyTimeoutRetry({ requests: 200 }), defaultMapping()],
    [withEffectSpans, parseMapping({ sideEffectSpans: [SIDE_EFFECT_SPAN_NAME] })],
  ];
  return runs.flatMap(([scenario, mapping]) => {
    const { spans } = simulate(scenario, { seed: 5 });
    const linker = new SendLinker();
    return splitIntoPayloads(spans, 40, 5).map((payload) => {
      const batch = extractAttempts(payload, mapping, limits);
      linker.linkInto(batch);
      return batch;
    });
  });
}

const LONG = 'x'.repeat(5_000);
const LONG_TWO_BYTE = '\u20ac'.repeat(3_000);

/** Attempts of every kind, with every field at its odd values. */
function oddAttempts(): Attempt[] {
  return [
    server({ key: 'k', tenant: '', businessId: '', statusCode: 0, effect: '' }),
    server({
      key: 'k',
      tenant: 'lone \ud800 high',
      operation: 'lone \udc00 low',
      store: '',
      scope: '',
      outcome: 'error',
      statusCode: 599,
      failed: true,
      effect: 'unknown',
      released: true,
      businessId: 'pay_\udfff',
      effectSpansDeclared: true,
      parentSpanId: '00f067aa0ba902b7',
    }),
    server({ key: 'k', businessId: LONG, operation: LONG_TWO_BYTE, store: LONG }),
    server({ key: 'k', outcome: 'hit', statusCode: 200, scope: '', outcomeFrom: 'http' }),
    // Ids that are not lowercase hex of their length are kept as text.
    server({ key: 'k', traceId: '0AF7651916CD43DD8448EB211C80319C', spanId: 'B7AD6B7169203331' }),
    server({ key: 'k', traceId: '', spanId: '', parentSpanId: 'not-an-id' }),
    server({ key: 'k', traceId: 'abc', spanId: '\ud83d\udcb3', parentSpanId: '\ud800' }),
    arrival({ key: 'k', statusCode: 503, effect: 'none', released: true, businessId: 'b-\u00e9' }),
    arrival({ key: 'k', statusCode: 2 ** 31, failed: false }),
    client({ key: 'k', resendCount: 3, target: 'payments:8443', statusCode: 504, error: 'timeout' }),
    client({ key: 'k', keyFrom: 'child', error: 'lone \udbff', target: '' }),
    client({ key: 'k', resendCount: -0, statusCode: Number.NaN }),
    client({ key: 'k', resendCount: 1.5, statusCode: -1 }),
    client({ key: 'k', resendCount: Number.POSITIVE_INFINITY, statusCode: Number.MAX_SAFE_INTEGER }),
    effect({ key: 'k', failed: true }),
    effect({ key: 'k', failed: false, operation: '' }),
    // A list may hold other keys than its first (the caller names the list).
    server({ key: '', tenant: 't' }),
    server({ key: LONG_TWO_BYTE }),
    server({ key: 'k', durationMillis: 0.000_1, at: -1e6 }),
    { ...server({ key: 'k' }), startUnixMillis: -0, endUnixMillis: Number.MIN_VALUE },
    // Values outside their closed lists, which extraction never makes, are kept as they are.
    {
      ...server({ key: 'k' }),
      outcome: 'maybe' as unknown as Outcome,
      scope: 'planet' as unknown as ScopeLevel,
      effect: 'committed ' as unknown as Effect,
    },
  ];
}

describe('the compact attempt log', () => {
  it('hands back every kind and field of its attempts exactly, odd strings and numbers included', () => {
    const log = createCompactAttemptLog();
    const attempts = oddAttempts();
    for (const attempt of attempts) expect(log.append('k', attempt)).toBe(true);
    const back = log.attemptsOf('k');
    expect(back).toEqual(attempts);
    for (const [i, attempt] of back.entries()) {
      for (const [name, value] of Object.entries(attempts[i]!)) {
        if (name !== 'placement')
          expect(Object.is((attempt as unknown as Record<string, unknown>)[name], value)).toBe(true);
      }
    }
    expect(back.map((a) => a.key)).toEqual(attempts.map((a) => a.key));
  });

  it('hands back extracted attempts equal as JSON too, properties in their order, key by key in order', () => {
    const log = createCompactAttemptLog();
    const byKey = new Map<string, Attempt[]>();
    for (const batch of simulatedBatches()) {
      for (const attempt of batch.attempts) {
        const key = partitionKey(attempt, { keyNamespace: 'global' });
        if (!log.append(key, attempt)) continue;
        const list = byKey.get(key);
        if (list === undefined) byKey.set(key, [attempt]);
        else list.push(attempt);
      }
    }
    expect(byKey.size).toBeGreaterThan(500);
    const { attempts, recordBytes } = log.stats();
    expect(attempts).toBe([...byKey.values()].reduce((sum, list) => sum + list.length, 0));
    // Ids as bytes, names and placements as numbers: about 60 bytes an attempt.
    expect(recordBytes / attempts).toBeLessThan(80);
    const kinds = new Set<string>();
    for (const [key, appended] of byKey) {
      const back = log.attemptsOf(key);
      expect(JSON.stringify(back)).toBe(JSON.stringify(appended));
      expect(back).toEqual(appended);
      for (const attempt of appended)
        kinds.add(attempt.kind + (attempt.kind === 'client' ? (attempt.keyFrom ?? '') : ''));
    }
    expect([...kinds].sort()).toEqual(['arrival', 'client', 'clientchild', 'effect', 'server']);
  });

  it('hands back the first placement object appended for every equal placement', () => {
    const log = createCompactAttemptLog();
    log.append('k', server({ key: 'k', node: 'a' }));
    log.append('k', arrival({ key: 'k', node: 'a' }));
    log.append('k', server({ key: 'k', node: 'b' }));
    const appended = server({ key: 'k', node: 'a' });
    log.append('k', appended);
    const [first, second, third, fourth] = log.attemptsOf('k');
    expect(first!.placement).toBe(second!.placement);
    expect(fourth!.placement).toBe(first!.placement);
    expect(appended.placement).not.toBe(first!.placement);
    expect(third!.placement).not.toBe(first!.placement);
    expect(third!.placement.node).toBe('b');
  });

  it('refuses an attempt whose trace and span ids it holds for the key, whatever its kind', () => {
    const log = createCompactAttemptLog();
    const ids = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
    expect(log.append('k', server({ key: 'k', ...ids }))).toBe(true);
    expect(log.append('k', server({ key: 'k', ...ids, at: 5 }))).toBe(false);
    expect(log.append('k', arrival({ key: 'k', ...ids }))).toBe(false);
    expect(log.append('k', server({ key: 'k', ...ids, spanId: '00f067aa0ba902b8' }))).toBe(true);
    expect(log.append('k', server({ key: 'k', ...ids, traceId: '4bf92f3577b34da6a3ce929d0e0e4737' }))).toBe(
      true,
    );
    // The same ids under another key are that key's first attempt.
    expect(log.append('other', server({ key: 'other', ...ids }))).toBe(true);
    // Ids kept as text compare as text: another case is another id.
    expect(log.append('k', server({ key: 'k', traceId: 'T', spanId: 'S' }))).toBe(true);
    expect(log.append('k', server({ key: 'k', traceId: 'T', spanId: 'S' }))).toBe(false);
    expect(log.append('k', server({ key: 'k', traceId: 't', spanId: 'S' }))).toBe(true);
    expect(log.attemptsOf('k')).toHaveLength(5);
  });

  it('refuses redelivered attempts of a key with thousands of attempts, and of one with long keys', () => {
    const log = createCompactAttemptLog();
    const attempts = Array.from({ length: 3_000 }, (_, i) =>
      i % 3 === 0
        ? server({ key: 'hot', at: i })
        : client({ key: i % 3 === 1 ? 'hot' : `${LONG}-${i}`, at: i }),
    );
    for (const attempt of attempts) expect(log.append('hot', attempt)).toBe(true);
    for (const attempt of attempts) expect(log.append('hot', { ...attempt, startUnixMillis: 0 })).toBe(false);
    expect(log.attemptsOf('hot')).toEqual(attempts);
  });

  it('keeps fewer keys, attempts and bytes as the keys expire, and hands back the others unchanged', () => {
    const log = createCompactAttemptLog();
    const keys = Array.from({ length: 100 }, (_, i) => `k${i}`);
    const appended = new Map<string, Attempt[]>();
    for (const [i, key] of keys.entries()) {
      // Key i is last seen at second i.
      const attempts = [client({ key, at: i - 0.5 }), server({ key, at: i - 0.2, durationMillis: 200 })];
      for (const attempt of attempts) log.append(key, attempt);
      appended.set(key, attempts);
    }
    const full = log.stats();
    expect(full).toMatchObject({ keys: 100, attempts: 200 });
    log.expire(server({ at: 40 }).startUnixMillis);
    const expired = log.stats();
    expect(expired).toMatchObject({ keys: 60, attempts: 120 });
    expect(expired.recordBytes).toBeLessThan(full.recordBytes * 0.61);
    expect(log.attemptsOf('k39')).toEqual([]);
    for (const key of keys.slice(40)) expect(log.attemptsOf(key)).toEqual(appended.get(key));
    log.expire(Number.POSITIVE_INFINITY);
    expect(log.stats()).toMatchObject({ keys: 0, attempts: 0, recordBytes: 0 });
  });

  it('forgets the names only expired keys used, and still hands back the keys left', () => {
    const log = createCompactAttemptLog();
    const kept = [server({ key: 'kept', tenant: 'acme', at: 100 }), client({ key: 'kept', at: 100 })];
    for (let i = 0; i < 70_000; i++)
      log.append(`k${i}`, server({ key: `k${i}`, tenant: `tenant-${i}`, at: 0 }));
    for (const attempt of kept) log.append('kept', attempt);
    expect(log.stats().names).toBeGreaterThan(70_000);
    log.expire(server({ at: 50 }).startUnixMillis);
    expect(log.stats()).toMatchObject({ keys: 1, attempts: 2 });
    expect(log.stats().names).toBeLessThan(20);
    expect(log.attemptsOf('kept')).toEqual(kept);
    expect(log.append('kept', kept[1]!)).toBe(false);
  });

  it('gives back the chunks of expired records once they hold most of its memory', () => {
    const log = createCompactAttemptLog();
    const kept = server({ key: 'kept', businessId: 'b', at: 100 });
    // About 5 kB a record: 80 MB in all.
    for (let i = 0; i < 16_000; i++) log.append(`k${i}`, server({ key: `k${i}`, businessId: LONG, at: 0 }));
    log.append('kept', kept);
    expect(log.stats().chunkBytes).toBeGreaterThan(80_000_000);
    log.expire(server({ at: 50 }).startUnixMillis);
    expect(log.stats().chunkBytes).toBeLessThanOrEqual(2 ** 20);
    expect(log.attemptsOf('kept')).toEqual([kept]);
  });
});
