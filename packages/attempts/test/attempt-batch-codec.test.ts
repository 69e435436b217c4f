import { scenarios, simulate, splitIntoPayloads } from '@keyscope/simulator';
import { describe, expect, it } from 'vitest';
// By path: testkit depends on this package, so it is not one of this package's dependencies.
import { server } from '../../testkit/src/attempt-builders.ts';
import type { Attempt, KeylessSend, NodeActivity, Placement } from '../src/attempt.ts';
import { AttemptBatchDecoder, AttemptBatchEncoder } from '../src/attempt-batch-codec.ts';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping } from '../src/mapping.ts';
import { type CheckedAttempts, EARLIEST_SPAN_UNIX_MILLIS, type SpanLimits } from '../src/span-limits.ts';

const limits: SpanLimits = {
  notBeforeUnixMillis: EARLIEST_SPAN_UNIX_MILLIS,
  notAfterUnixMillis: Date.UTC(2100, 0, 1),
  maxKeyBytes: 256,
  maxNameBytes: 256,
  maxValueBytes: 512,
};

/** Extracted batches of a simulated benchmark run: every kind of attempt, keyless sends, activity. */
function simulatedBatches(): CheckedAttempts[] {
  const { spans } = simulate(scenarios.benchmark({ spans: 6_000 }), { seed: 3 });
  return splitIntoPayloads(spans, 12, 3).map((payload) => extractAttempts(payload, defaultMapping(), limits));
}

/** Through the bytes as another thread would receive them: a transferred copy of the buffer. */
function roundTrip(batches: readonly CheckedAttempts[], encoder = new AttemptBatchEncoder()) {
  const decoder = new AttemptBatchDecoder();
  return batches.map((batch) => {
    const bytes = encoder.encode(batch);
    expect(bytes.byteOffset).toBe(0);
    expect(bytes.byteLength).toBe(bytes.buffer.byteLength);
    return decoder.decode(new Uint8Array(structuredClone(bytes.buffer, { transfer: [bytes.buffer] })));
  });
}

const placement: Placement = Object.freeze({
  service: 'payments',
  node: 'payments-a-1',
  cluster: 'eu-1',
  region: 'eu',
  zone: '',
});

function attemptsOfEveryShape(): CheckedAttempts {
  const base = {
    tenant: 'acme',
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    parentSpanId: '',
    startUnixMillis: 1_767_225_600_000.125,
    endUnixMillis: 1_767_225_600_250.5,
    placement,
    operation: 'POST /payments',
  };
  const attempts: Attempt[] = [
    {
      ...server({
        key: 'k-\ud83d\udcb3',
        outcome: 'miss',
        store: 'redis-eu',
        scope: '',
        statusCode: 201,
        failed: false,
        effect: 'committed',
        released: true,
        businessId: 'pay_1',
        effectSpansDeclared: true,
      }),
      ...base,
    },
    {
      ...server({
        key: 'k-inferred',
        outcome: 'miss',
        store: 'payments/unknown',
        scope: '',
        statusCode: 200,
        failed: false,
        outcomeFrom: 'http',
      }),
      ...base,
    },
    {
      kind: 'arrival',
      key: 'lone \ud800 surrogate',
      ...base,
      statusCode: 503,
      failed: true,
      effect: '',
      released: false,
      businessId: '',
      method: 'POST',
    },
    {
      kind: 'client',
      key: 'café',
      ...base,
      resendCount: 2,
      target: 'payments:8443',
      statusCode: 0,
      error: 'timeout',
      keyFrom: 'child',
    },
    { kind: 'client', key: 'k3', ...base, resendCount: 0, target: '', statusCode: 200, error: '' },
    { kind: 'effect', key: 'k4', ...base, operation: 'ledger.charge', failed: true },
  ];
  const { tenant: _tenant, ...sendBase } = base;
  const keylessSends: KeylessSend[] = [
    { kind: 'client', ...sendBase, resendCount: 1, target: 'x', statusCode: 504, error: 'reset' },
  ];
  const activity: NodeActivity[] = [
    { placement, bucketStartUnixMillis: 1_767_225_600_000, bucketMillis: 1000, spans: 3, errors: 1 },
    {
      placement,
      bucketStartUnixMillis: 1_767_225_601_000,
      bucketMillis: 1000,
      spans: 2,
      errors: 0,
      latency: [0, 1, 1, 0],
    },
  ];
  return {
    attempts,
    activity,
    invalid: { outcome: 1, hit: 0, scope: 2 },
    keylessSends,
    refusals: {
      byCode: { KS_SPAN_IN_FUTURE: 2, KS_SPAN_KEY_TOO_LONG: 1 },
      total: 3,
      firstMessage: 'span 00f0 starts in the future',
      truncatedValues: 4,
    },
  };
}

describe('attempt batches as bytes', () => {
  it('decode to the extracted batches, property order included', () => {
    const batches = simulatedBatches();
    const kinds = new Set(batches.flatMap((batch) => batch.attempts.map((attempt) => attempt.kind)));
    expect([...kinds].sort()).toEqual(['arrival', 'client', 'server']);
    expect(batches.some((batch) => (batch.keylessSends ?? []).length > 0)).toBe(true);
    const decoded = roundTrip(batches);
    expect(decoded).toEqual(batches);
    expect(JSON.stringify(decoded)).toBe(JSON.stringify(batches));
  });

  it('keep every string and number as it was, lone surrogates and absent fields included', () => {
    const batch = attemptsOfEveryShape();
    const [decoded] = roundTrip([batch]);
    expect(decoded).toEqual(batch);
    expect(JSON.stringify(decoded)).toBe(JSON.stringify(batch));
    expect(decoded!.attempts[2]!.key).toBe('lone \ud800 surrogate');
    expect('keyFrom' in decoded!.attempts[4]!).toBe(false);
    expect('outcomeFrom' in decoded!.attempts[0]!).toBe(false);
    expect('latency' in decoded!.activity[0]!).toBe(false);
  });

  it('hand every batch the same placement object for one placement, as extraction does', () => {
    const batch = attemptsOfEveryShape();
    const [first, second] = roundTrip([batch, batch]);
    expect(Object.isFrozen(first!.attempts[0]!.placement)).toBe(true);
    expect(second!.attempts[0]!.placement).toBe(first!.attempts[0]!.placement);
    expect(second!.activity[0]!.placement).toBe(first!.attempts[0]!.placement);
  });

  it('write into shared memory when it has room, else into a buffer of their own', () => {
    const [small, large] = [attemptsOfEveryShape(), simulatedBatches()[0]!];
    const shared = new Uint8Array(new SharedArrayBuffer(64 * 1024), 8 * 1024, 4 * 1024);
    const encoder = new AttemptBatchEncoder();
    const decoder = new AttemptBatchDecoder();
    const inPlace = encoder.encode(small, shared);
    expect(inPlace.buffer).toBe(shared.buffer);
    expect(inPlace.byteOffset).toBe(shared.byteOffset);
    expect(decoder.decode(inPlace)).toEqual(small);
    const own = encoder.encode(large, shared);
    expect(own.buffer).not.toBe(shared.buffer);
    expect(decoder.decode(own)).toEqual(large);
    // Written over at once: nothing decoded before reads the bytes again.
    const decoded = decoder.decode(encoder.encode(small, shared));
    shared.fill(0);
    expect(decoded).toEqual(small);
  });

  it('forget names and placements on both sides together when the limits would be exceeded', () => {
    const batches = simulatedBatches();
    const encoder = new AttemptBatchEncoder({ maxNames: 2_000, maxPlacements: 40 });
    const decoded = roundTrip(batches, encoder);
    expect(decoded).toEqual(batches);
    // Forgetting costs the names again: more bytes than a stream that never forgets.
    const bytes = (e: AttemptBatchEncoder) => batches.reduce((sum, b) => sum + e.encode(b).byteLength, 0);
    expect(bytes(new AttemptBatchEncoder({ maxNames: 2_000, maxPlacements: 40 }))).toBeGreaterThan(
      bytes(new AttemptBatchEncoder()),
    );
  });
});
