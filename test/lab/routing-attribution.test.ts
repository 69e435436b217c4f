import { describe, expect, it } from 'vitest';
import { scoreRecording } from './score.ts';

// What keyscope's report on each committed recording must at least reach: the routing event behind
// each duplicate in a failure window (a latency_spike of the browned-out node, a node_down of the
// killed or partitioned one), and the suspected duplicates of executions whose spans were lost.
describe('routing events keyscope names on the committed recordings', () => {
  // cluster-store-short-ttl: one store the cluster shares, whose keys expire while the slowed node's
  // callers retry; every duplicate is a same-store repeat on another node, blamed on the brownout.
  it.each([
    { scenario: 'brownout-round-robin' },
    { scenario: 'brownout-short-ttl' },
    { scenario: 'cluster-store-short-ttl' },
  ])(
    'blames at least 95 in 100 of the $scenario duplicates in the brownout on a latency_spike of the slowed node',
    async ({ scenario }) => {
      const score = await scoreRecording(scenario);
      // The brownout left duplicates to attribute: the ratio is not of nothing.
      expect(score.foundInWindow).toBeGreaterThan(50);
      expect(score.attributionRatio).toBeGreaterThanOrEqual(0.95);
      expect(score.falseKeys).toEqual([]);
    },
    120_000,
  );

  it.each([
    { scenario: 'node-killed-behind-proxy', attributed: 13, flagged: 25, suspectedPrecision: 0.89 },
    { scenario: 'partition', attributed: 3, flagged: 0, suspectedPrecision: null },
    { scenario: 'two-failovers', attributed: 0, flagged: 31, suspectedPrecision: 0.9 },
    { scenario: 'proxy-retries-posts', attributed: 113, flagged: 0, suspectedPrecision: null },
    { scenario: 'haproxy-node-killed', attributed: 16, flagged: 5, suspectedPrecision: 0.7 },
  ])(
    'keeps the $scenario recording attributed as well as before, and its suspected duplicates',
    async ({ scenario, attributed, flagged, suspectedPrecision }) => {
      const score = await scoreRecording(scenario);
      expect(score.attributed).toBeGreaterThanOrEqual(attributed);
      expect(score.attributionRatio ?? 1).toBe(1);
      expect(score.falseKeys).toEqual([]);
      expect(score.flagged).toBeGreaterThanOrEqual(flagged);
      if (suspectedPrecision !== null)
        expect(score.suspectedPrecision).toBeGreaterThanOrEqual(suspectedPrecision);
    },
    120_000,
  );
});
