import { arrival, client, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { CoverageBatch } from '../../src/coverage/coverage-batch.ts';
import { EvidenceCoverage } from '../../src/coverage/evidence-coverage.ts';
import { ScopeReport } from '../../src/coverage/scope-report.ts';

function batchOf() {
  const scopes = new ScopeReport();
  const coverage = new EvidenceCoverage(10_000, 1_000_000, scopes);
  return { scopes, coverage, batch: new CoverageBatch(coverage) };
}

describe('CoverageBatch', () => {
  it('holds attempts until handed off, then gives every one to the evidence coverage join', () => {
    const { coverage, batch } = batchOf();
    batch.hold(client({ key: 'k1', at: 0 }), 0, false);
    batch.hold(server({ key: 'k1', at: 0 }), 0, true);
    expect(coverage.pendingEntries).toBe(0);

    batch.handOff();

    expect(coverage.pendingEntries).toBe(2);
    expect(batch.size).toBe(0);
  });

  it("hands off what it holds before it tells the join a slot's key was forgotten, so the slot's next key starts afresh", () => {
    const { scopes, coverage, batch } = batchOf();
    const request = arrival({ key: 'k2', statusCode: 200, at: 0 });
    // A decision of another key in the request's trace: matched with it only if both shared a window.
    const decision = server({ key: 'k1', traceId: request.traceId, parentSpanId: request.spanId, at: 0 });
    batch.hold(decision, 0, false);

    batch.detach(0);
    expect(batch.size).toBe(0);
    batch.hold(request, 0, false);
    batch.handOff();
    coverage.finalizeAll();

    expect(scopes.rows()[0]!.coverage).toMatchObject({ arrivals: 1, arrivalsWithDecision: 0 });
  });
});
