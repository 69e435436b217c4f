import type { Attempt } from '@keyscope/attempts';
import { arrival, client, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { createDetector, defaultDetectorConfig } from '../../src/index.ts';

const EVERY_KEY = { ...defaultDetectorConfig(), coverageKeysOneIn: 1 };

/**
 * One payment of `key` sent twice: each send's request (a SERVER span carrying the key, route
 * `/payments`) decided on an `idempotency.check` child span, in the store of its node.
 */
function paymentRunTwice(key: string, at: number, withArrivals = true): Attempt[] {
  const attempts: Attempt[] = [];
  ['a', 'b'].forEach((node, i) => {
    const traceId = `${key.padStart(4, '0')}${'0'.repeat(27)}${i}`;
    const send = client({
      key,
      traceId,
      at: at + i * 2,
      durationMillis: 2000,
      resendCount: i,
      service: 'checkout',
    });
    const request = arrival({
      key,
      traceId,
      parentSpanId: send.spanId,
      node,
      at: at + i * 2,
      durationMillis: 2500,
      method: 'POST',
    });
    attempts.push(send);
    if (withArrivals) attempts.push(request);
    attempts.push(
      server({
        key,
        traceId,
        parentSpanId: request.spanId,
        node,
        store: `payments/node:${node}`,
        operation: 'idempotency.check',
        at: at + i * 2 + 0.001,
        durationMillis: 3,
      }),
    );
  });
  return attempts;
}

function detect(attempts: Attempt[]) {
  const detector = createDetector(EVERY_KEY);
  detector.ingest({ attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } });
  detector.flush();
  return detector;
}

describe('endpoints of decisions recorded on child spans', () => {
  it("names the finding and the incident after the request's route, not the decision span", () => {
    const detector = detect([...paymentRunTwice('k1', 0), ...paymentRunTwice('k2', 10)]);
    const findings = detector.findings();
    expect(findings.map((f) => [f.class, f.operation])).toEqual([
      ['cross_store_duplicate', '/payments'],
      ['cross_store_duplicate', '/payments'],
    ]);
    const [incident] = detector.incidents();
    expect(incident!.operation).toBe('/payments');
    // The endpoint as the user calls it: the request's method and route.
    expect(findings.map((f) => f.method)).toEqual(['POST', 'POST']);
    expect(incident!.title.startsWith('payments POST /payments: 2 keys')).toBe(true);
  });

  it('shows the requests and their decisions as one scope-report row, named after the route', () => {
    const keys = Array.from({ length: 20 }, (_, i) => `key-${i}`);
    const detector = detect(keys.flatMap((key, i) => paymentRunTwice(key, i * 10)));
    const rows = detector.scopeReport().filter((row) => row.service === 'payments');
    expect(rows.map((row) => row.operation)).toEqual(['/payments']);
    expect(rows[0]!.declaredScope).toBe('node');
    expect(rows[0]!.keys).toBe(20);
    expect(rows[0]!.keysAtRisk).toBe(20);
    // The arrivals' coverage and the decisions' are one tier's: every arrival had its decision.
    expect(rows[0]!.coverage.arrivals).toBe(40);
    expect(rows[0]!.coverage.arrivalsWithDecision).toBe(40);
  });

  it('keeps the merged row through an export and import of the scope state', () => {
    const detector = detect(['k1', 'k2'].flatMap((key, i) => paymentRunTwice(key, i * 10)));
    const restored = createDetector(EVERY_KEY);
    restored.restore({ findings: [], scopeState: detector.scopeState() });
    expect(restored.scopeReport().map((row) => row.operation)).toEqual(['/payments']);
  });

  it('names the tier after the decision span when no SERVER span carries the key', () => {
    const detector = detect(paymentRunTwice('k1', 0, false));
    expect(detector.findings().map((f) => f.operation)).toEqual(['idempotency.check']);
    expect(detector.incidents()[0]!.title).toContain('span idempotency.check');
  });
});
