import type { Attempt, ExtractedAttempts } from '@keyscope/attempts';
import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { createDetector, type Detector, defaultDetectorConfig, type TierCoverage } from '../../src/index.ts';

const T0 = Date.UTC(2025, 5, 2, 9, 0, 0);
const LATENESS = defaultDetectorConfig().allowedLatenessMillis;
/** Every key counted, for exact figures (the default counts a sample of keys: see `coversKey`). */
const EVERY_KEY = { ...defaultDetectorConfig(), coverageKeysOneIn: 1 };

interface AttemptOptions {
  key?: string;
  traceId?: string;
  endMillis?: number;
  resendCount?: number;
  target?: string;
}

/** An attempt of checkout's send (`client`) or of payments' request (`arrival`, `server`), ending at T0 + endMillis. */
function attempt(
  kind: 'client' | 'arrival' | 'server',
  spanId: string,
  parentSpanId: string,
  options: AttemptOptions = {},
): Attempt {
  const end = T0 + (options.endMillis ?? 10);
  const base = {
    key: options.key ?? 'k1',
    tenant: '',
    traceId: options.traceId ?? 't1',
    spanId,
    parentSpanId,
    startUnixMillis: end - 10,
    endUnixMillis: end,
    placement: {
      service: kind === 'client' ? 'checkout' : 'payments',
      node: 'a',
      cluster: '',
      region: '',
      zone: '',
    },
    operation: kind === 'client' ? 'POST' : '/payments',
  };
  const result = {
    statusCode: 201,
    failed: false,
    effect: '' as const,
    released: false,
    businessId: '',
    method: '' as const,
  };
  if (kind === 'client')
    return {
      ...base,
      kind,
      resendCount: options.resendCount ?? 0,
      target: options.target ?? 'payments.internal:8443',
      statusCode: 201,
      error: '',
    };
  if (kind === 'arrival') return { ...base, ...result, kind };
  return { ...server({ outcome: 'miss', store: 'payments/s', scope: '' }), ...base, ...result };
}

function batch(attempts: Attempt[]): ExtractedAttempts {
  return { attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } };
}

/** Moves the watermark `millis` past T0 with an attempt of an unrelated key. */
function watermarkAt(detector: Detector, millis: number): void {
  detector.ingest(
    batch([
      attempt('client', `w${millis}`, '', { key: `clock-${millis}`, endMillis: millis, target: 'clock' }),
    ]),
  );
}

function payments(detector: Detector): TierCoverage {
  return detector.scopeReport().find((row) => row.service === 'payments')!.coverage;
}

/** A whole request of key `key`: its send, the arrival under it and the decision under that. */
function request(key: string, n: number, options: AttemptOptions = {}): Attempt[] {
  const ids = { traceId: `t-${key}-${n}`, key, ...options };
  return [
    attempt('client', `c-${key}-${n}`, '', ids),
    attempt('arrival', `a-${key}-${n}`, `c-${key}-${n}`, ids),
    attempt('server', `d-${key}-${n}`, `a-${key}-${n}`, ids),
  ];
}

describe('evidence coverage', () => {
  it('counts a key once the watermark is twice the allowed lateness past its attempts, and holds them until then', () => {
    const detector = createDetector(EVERY_KEY);
    detector.ingest(batch(request('k1', 1)));
    expect(payments(detector).arrivals).toBe(0);
    expect(detector.stats().coverageEntries).toBe(3);
    // An attempt ending within the lateness of these may still arrive, a lateness late.
    watermarkAt(detector, 2 * LATENESS);
    expect(payments(detector).arrivals).toBe(0);
    watermarkAt(detector, 3 * LATENESS);
    expect(payments(detector)).toMatchObject({
      arrivals: 1,
      arrivalsWithDecision: 1,
      requests: 1,
      requestsWithSend: 1,
      sends: 1,
      sendsWithServerSpan: 1,
      keys: 1,
      keysFullyVisible: 1,
    });
    // Only the clock keys' sends are held now, never the counted key.
    expect(detector.stats().coverageEntries).toBeLessThanOrEqual(2);
    expect(detector.stats().keysInMemory).toBeGreaterThanOrEqual(1);
  });

  it('matches a decision, a send and a server span that arrive later than what waits for them, within the lateness', () => {
    const detector = createDetector(EVERY_KEY);
    const [send, arrival, decision] = request('k1', 1);
    detector.ingest(batch([arrival!]));
    watermarkAt(detector, LATENESS / 2);
    detector.ingest(batch([decision!]));
    detector.ingest(batch([send!]));
    detector.flush();
    expect(payments(detector)).toMatchObject({
      arrivalsWithDecisionRatio: 1,
      requestsWithSendRatio: 1,
      sendsWithServerSpanRatio: 1,
      keysFullyVisibleRatio: 1,
    });
  });

  it('counts an arrival whose decision came after the arrival was final as an arrival without its decision', () => {
    const detector = createDetector(EVERY_KEY);
    const [, arrival, decision] = request('k1', 1);
    detector.ingest(batch([arrival!]));
    watermarkAt(detector, 4 * LATENESS);
    detector.ingest(batch([decision!]));
    detector.flush();
    // The decision, alone in its key's second window, is a request whose parent is no send.
    expect(payments(detector)).toMatchObject({
      arrivals: 1,
      arrivalsWithDecision: 0,
      requests: 2,
      keys: 2,
      keysFullyVisible: 0,
    });
  });

  it('sees an arrival without its send, and a send without its server span, as keys not fully visible', () => {
    const detector = createDetector(EVERY_KEY);
    const [, arrival, decision] = request('k1', 1);
    const [send] = request('k2', 1);
    detector.ingest(batch([arrival!, decision!, send!, ...request('k2', 2)]));
    detector.flush();
    expect(payments(detector)).toMatchObject({
      arrivals: 2,
      arrivalsWithDecision: 2,
      requests: 2,
      requestsWithSend: 1,
      // k2's unanswered send is the tier's: its other send to the same target landed there.
      sends: 2,
      sendsWithServerSpan: 1,
      keys: 2,
      keysFullyVisible: 0,
    });
  });

  it('gives an unanswered send of a key with no answered send to the tier its route leads to', () => {
    const detector = createDetector(EVERY_KEY);
    // Routes are learned from one counted key in sixteen: enough keys for one to teach it.
    const keys = Array.from({ length: 40 }, (_, i) => `ok${i}`);
    detector.ingest(batch(keys.flatMap((key) => request(key, 1))));
    watermarkAt(detector, 3 * LATENESS);
    const [lonely] = request('lonely', 1, { endMillis: 3 * LATENESS });
    detector.ingest(batch([lonely!]));
    detector.flush();
    expect(payments(detector)).toMatchObject({ sends: 41, sendsWithServerSpan: 40 });
  });

  it('sees a gap in the resend counts of a key as a key not fully visible', () => {
    const detector = createDetector(EVERY_KEY);
    // Sends 1 and 2 of k1 are seen, send 0 is not; k2 shows 0, 1 and 2.
    detector.ingest(
      batch([
        ...request('k1', 1, { resendCount: 1 }),
        ...request('k1', 2, { resendCount: 2 }),
        ...request('k2', 0, { resendCount: 0 }),
        ...request('k2', 1, { resendCount: 1 }),
        ...request('k2', 2, { resendCount: 2 }),
      ]),
    );
    detector.flush();
    expect(payments(detector)).toMatchObject({
      requestsWithSendRatio: 1,
      sendsWithServerSpanRatio: 1,
      keys: 2,
      keysFullyVisible: 1,
    });
  });

  it('counts a key again when it gets attempts after it was counted, its resend counts going on from before', () => {
    const detector = createDetector(EVERY_KEY);
    detector.ingest(batch(request('k1', 0, { resendCount: 0 })));
    watermarkAt(detector, 3 * LATENESS);
    // A redrive of k1 45 s later continues its resend count in a trace of its own.
    detector.ingest(batch(request('k1', 1, { resendCount: 1, endMillis: 45_000 })));
    detector.flush();
    expect(payments(detector)).toMatchObject({ keys: 2, keysFullyVisible: 2, arrivals: 2 });
  });

  it('counts a redelivered attempt once', () => {
    const detector = createDetector(EVERY_KEY);
    detector.ingest(batch(request('k1', 1)));
    detector.ingest(batch(request('k1', 1)));
    detector.flush();
    expect(payments(detector)).toMatchObject({ arrivals: 1, requests: 1, sends: 1, keys: 1 });
    expect(detector.stats().duplicateAttempts).toBe(3);
  });

  it('counts its oldest attempts early past maxCoverageEntries, each attempt once', () => {
    const detector = createDetector({ ...EVERY_KEY, maxCoverageEntries: 30 });
    for (let i = 0; i < 20; i++) detector.ingest(batch(request(`k${i}`, 1, { endMillis: i * 100 })));
    expect(detector.stats().coverageEntries).toBeLessThanOrEqual(30);
    expect(detector.stats().coverageEvictedEntries).toBeGreaterThan(0);
    detector.flush();
    expect(payments(detector)).toMatchObject({ arrivals: 20, requests: 20, sends: 20, keys: 20 });
    expect(detector.stats().coverageEntries).toBe(0);
  });

  it('holds nothing for keys whose attempts are final, however many keys the retry horizon holds', () => {
    const detector = createDetector(EVERY_KEY);
    for (let second = 0; second < 200; second++) {
      const keys = Array.from({ length: 50 }, (_, i) => `k${second}-${i}`);
      detector.ingest(batch(keys.flatMap((key) => request(key, 1, { endMillis: second * 1000 }))));
    }
    const { keysInMemory, coverageEntries } = detector.stats();
    expect(keysInMemory).toBe(10_000);
    // What the last two allowed latenesses (and a bucket) brought, no more.
    expect(coverageEntries).toBeLessThanOrEqual(3 * 50 * ((2 * LATENESS) / 1000 + 2));
    expect(payments(detector).keys).toBeGreaterThanOrEqual(10_000 - 50 * ((2 * LATENESS) / 1000 + 2));
  });

  it('keeps its figures across a restore from the persisted scope state', () => {
    const detector = createDetector(EVERY_KEY);
    const [send, arrival] = request('k1', 1);
    detector.ingest(batch([send!, arrival!]));
    detector.flush();
    const restored = createDetector(EVERY_KEY);
    restored.restore({ findings: [], scopeState: detector.scopeState() });
    expect(payments(restored)).toEqual(payments(detector));
    expect(payments(restored)).toMatchObject({ arrivals: 1, arrivalsWithDecision: 0, requestsWithSend: 1 });
  });
});
