import type { Attempt } from '@keyscope/attempts';
import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { DistinctCount } from '../../src/coverage/distinct-count.ts';
import {
  createDetector,
  type Detector,
  defaultDetectorConfig,
  OVERFLOW_TIER,
  type ScopeReportState,
  tierName,
} from '../../src/index.ts';

const NO_INVALID = { outcome: 0, hit: 0, scope: 0 };

function detectorWith(maxTiers: number): Detector {
  return createDetector({ ...defaultDetectorConfig(), maxTiers, coverageKeysOneIn: 1 });
}

function ingest(detector: Detector, attempts: Attempt[]) {
  return detector.ingest({ attempts, activity: [], invalid: NO_INVALID });
}

/** One key executed once at each of `count` operations, from `first` on. */
function tiers(count: number, first = 0): Attempt[] {
  return Array.from({ length: count }, (_, i) =>
    server({ key: `k-${first + i}`, node: 'a', store: 'A', operation: `POST /op-${first + i}`, at: i }),
  );
}

/** What a run that saw `count` tiers of payments, one key each, saved. */
function savedTiers(count: number): ScopeReportState {
  return Array.from({ length: count }, (_, i) => ({
    tier: tierName('payments', `POST /op-${i}`),
    service: 'payments',
    operation: `POST /op-${i}`,
    declared: { node: 1 },
    keys: 1,
    spread: [1, 0, 0, 0],
    coverage: [0, 0, 0, 0, 1, 1, 0, 0],
  }));
}

describe('the scope report past detector.maxTiers', () => {
  it('keeps the first maxTiers tiers one by one and sums the rest in an overflow bucket, counting its attempts', () => {
    const detector = detectorWith(3);
    ingest(detector, tiers(10));
    expect(detector.scopeReport().map((row) => row.operation)).toEqual([
      'POST /op-0',
      'POST /op-1',
      'POST /op-2',
    ]);
    expect(detector.scopeOverflow()).toMatchObject({ tiers: 7, keys: 7 });
    expect(detector.stats()).toMatchObject({ tiers: 3, tierOverflowAttempts: 7 });
    // A tier kept one by one stays so; its later attempts count at it, not in the overflow.
    ingest(detector, [server({ key: 'k-again', node: 'a', store: 'A', operation: 'POST /op-1', at: 20 })]);
    expect(detector.scopeReport()[1]!.keys).toBe(2);
    expect(detector.stats().tierOverflowAttempts).toBe(7);
  });

  it('still finds the duplicate of a key whose tier is past the cap', () => {
    const detector = detectorWith(2);
    ingest(detector, tiers(5));
    const changes = ingest(detector, [
      server({ key: 'order-9', node: 'a', store: 'A', operation: 'POST /late-tier', at: 30 }),
      server({ key: 'order-9', node: 'b', store: 'B', operation: 'POST /late-tier', at: 32 }),
    ]);
    expect(changes.findings).toHaveLength(1);
    expect(changes.findings[0]).toMatchObject({
      class: 'cross_store_duplicate',
      operation: 'POST /late-tier',
      stores: ['A', 'B'],
    });
    // Its spread counts in the overflow bucket: one more key, retried on a second node.
    expect(detector.scopeOverflow()).toMatchObject({ tiers: 4, keys: 4, keysSpanning: { nodes: 1 } });
    expect(detector.scopeReport()).toHaveLength(2);
  });

  it('counts the evidence coverage of tiers past the cap in the overflow bucket', () => {
    const detector = detectorWith(1);
    ingest(detector, tiers(4));
    detector.flush();
    expect(detector.scopeReport()[0]!.coverage.keys).toBe(1);
    expect(detector.scopeOverflow()!.coverage).toMatchObject({ keys: 3, keysFullyVisible: 3 });
  });

  it('says nothing of an overflow while the tiers fit', () => {
    const detector = detectorWith(10);
    ingest(detector, tiers(10));
    expect(detector.scopeOverflow()).toBeNull();
    expect(detector.scopeState().some((row) => row.tier === OVERFLOW_TIER)).toBe(false);
  });

  it('restores the overflow bucket and its count of tiers with the rest of the report', () => {
    const detector = detectorWith(3);
    ingest(detector, tiers(50));
    const restored = detectorWith(3);
    restored.restore({ findings: [], scopeState: detector.scopeState() });
    expect(restored.scopeOverflow()).toEqual(detector.scopeOverflow());
    // A tier seen before the restart goes on counting where it did.
    ingest(restored, tiers(1, 40));
    expect(restored.scopeOverflow()!.keys).toBe(48);
    expect(restored.scopeReport()).toHaveLength(3);
  });
});

describe('the scope report’s changes', () => {
  it('lists only the tiers a batch changed, each once, among fifty thousand', () => {
    const detector = detectorWith(100_000);
    detector.restore({ findings: [], scopeState: savedTiers(50_000) });
    expect(detector.scopeChanges()).toEqual([]);
    ingest(detector, [
      server({ key: 'k-new', node: 'a', store: 'A', operation: 'POST /op-17', at: 60_000 }),
      server({ key: 'k-new-2', node: 'a', store: 'A', operation: 'POST /op-17', at: 60_001 }),
    ]);
    const changes = detector.scopeChanges();
    expect(changes.map((row) => row.operation)).toEqual(['POST /op-17']);
    expect(changes[0]!.keys).toBe(3);
    expect(detector.scopeChanges()).toEqual([]);
  });

  it('upserted by tier over what was saved, they make the whole state', () => {
    const detector = detectorWith(4);
    const saved = new Map<string, unknown>();
    const save = () => {
      for (const row of detector.scopeChanges()) saved.set(row.tier, row);
    };
    ingest(detector, tiers(3));
    save();
    ingest(detector, tiers(5, 3));
    ingest(detector, [server({ key: 'k-0', node: 'b', store: 'B', operation: 'POST /op-0', at: 9 })]);
    save();
    detector.flush();
    save();
    const byTier = (rows: readonly { tier: string }[]) =>
      [...rows].sort((a, b) => (a.tier < b.tier ? -1 : 1));
    expect(byTier([...saved.values()] as { tier: string }[])).toEqual(byTier(detector.scopeState()));
  });
});

describe('paging the scope report', () => {
  it('pages in order of service then operation, each tier once, as tiers are added between pages', () => {
    const detector = detectorWith(1_000);
    ingest(detector, tiers(25));
    const seen: string[] = [];
    let after = '';
    for (let pages = 0; pages < 10; pages++) {
      const page = detector.scopeReportPage(after, 10);
      seen.push(...page.rows.map((row) => row.operation));
      if (page.next === null) break;
      after = page.next;
      // Tiers that sort before the cursor come in meanwhile: no page repeats or skips a tier.
      if (pages === 0) ingest(detector, [server({ key: 'k-a', operation: 'POST /a-early', at: 40 })]);
    }
    expect(seen).toEqual(
      detector
        .scopeReport()
        .map((row) => row.operation)
        .filter((operation) => operation !== 'POST /a-early'),
    );
    expect(new Set(seen).size).toBe(25);
  });
});

describe('DistinctCount', () => {
  it('counts a few hundred names exactly and a hundred thousand within 5%, in 4 KiB', () => {
    const few = new DistinctCount();
    for (let i = 0; i < 300; i++) for (let repeat = 0; repeat < 3; repeat++) few.add(`POST /payments/${i}`);
    expect(few.estimate()).toBe(300);
    const many = new DistinctCount();
    for (let i = 0; i < 100_000; i++) many.add(`svc\u0000POST /payments/${i.toString(36)}`);
    expect(Math.abs(many.estimate() - 100_000) / 100_000).toBeLessThan(0.05);
    const copy = new DistinctCount();
    copy.importState(many.exportState());
    expect(copy.estimate()).toBe(many.estimate());
    expect(Buffer.from(many.exportState(), 'base64').length).toBe(4096);
  });
});
