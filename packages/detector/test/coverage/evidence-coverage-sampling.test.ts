import { type Attempt, defaultMapping, extractAttempts, partitionKey } from '@keyscope/attempts';
import type { Span } from '@keyscope/otlp';
import { duplicateSome, type Scenario, scenarios, simulate, splitIntoPayloads } from '@keyscope/simulator';
import { describe, expect, it } from 'vitest';
import { coversKey } from '../../src/coverage/evidence-coverage.ts';
import {
  COVERAGE_COUNTS,
  createDetector,
  defaultDetectorConfig,
  type TierCoverage,
} from '../../src/index.ts';
import { type CoverageCounts, coverageTruth } from '../support/coverage-truth.ts';

/**
 * Evidence coverage against what the simulator's services really recorded: head sampling as the
 * OpenTelemetry SDKs do it (`Scenario.sampling`), the spans it dropped named in the ground truth.
 */

const LATENESS = defaultDetectorConfig().allowedLatenessMillis;
const SPANS_PER_PAYLOAD = 512;
const SERVERS = ['payments', 'ledger', 'orders', 'transfers', 'refunds', 'subscriptions'];

/**
 * The spans in start order, one payload of 512 at a time, as a Collector would forward them;
 * coverage counted over every key unless `keysOneIn` says otherwise.
 */
function detect(payloads: readonly Span[][], keysOneIn = 1): Map<string, TierCoverage> {
  const detector = createDetector({ ...defaultDetectorConfig(), coverageKeysOneIn: keysOneIn });
  for (const payload of payloads) detector.ingest(extractAttempts(payload, defaultMapping()));
  detector.flush();
  return new Map(detector.scopeReport().map((row) => [`${row.service} ${row.operation}`, row.coverage]));
}

function inPayloads(spans: readonly Span[]): Span[][] {
  const payloads: Span[][] = [];
  for (let i = 0; i < spans.length; i += SPANS_PER_PAYLOAD)
    payloads.push(spans.slice(i, i + SPANS_PER_PAYLOAD));
  return payloads;
}

const spanId = (span: { traceId: string; spanId: string }) => `${span.traceId}/${span.spanId}`;

/**
 * A sampled run, the same run unsampled (sampling draws nothing from the run's random sequence,
 * so it is the same traffic), and the attempts of the unsampled run that sampling did not drop.
 */
function sampledRun(scenario: Scenario) {
  const { sampling, ...unsampled } = scenario;
  const run = simulate(scenario);
  const all = simulate(unsampled).spans;
  const dropped = new Set((run.truth.sampledOut ?? []).map(spanId));
  const delivered: Attempt[] = extractAttempts(all, defaultMapping()).attempts.filter(
    (attempt) => !dropped.has(spanId(attempt)),
  );
  return { spans: run.spans, all, dropped, delivered };
}

function countsOf(coverage: TierCoverage): CoverageCounts {
  return Object.fromEntries(COVERAGE_COUNTS.map((name) => [name, coverage[name]])) as CoverageCounts;
}

describe('evidence coverage of sampled traffic', () => {
  // Without node failures: a send to a node that is down reaches no server span, with nothing lost.
  const whole = () => scenarios.mixed({ failures: [] });

  it('is 100% on every figure of every tier when nothing is sampled or lost', () => {
    const coverage = detect(inPayloads(simulate(whole()).spans));
    expect([...coverage.keys()].map((tier) => tier.split(' ')[0]).sort()).toEqual([...SERVERS].sort());
    for (const [tier, figures] of coverage) {
      expect(figures.keys, tier).toBeGreaterThan(100);
      expect(figures.requests, tier).toBeGreaterThan(100);
      expect(figures.sends, tier).toBeGreaterThan(100);
      expect(figures.requestsWithSendRatio, tier).toBe(1);
      expect(figures.sendsWithServerSpanRatio, tier).toBe(1);
      expect(figures.keysFullyVisibleRatio, tier).toBe(1);
      if (figures.arrivals > 0) expect(figures.arrivalsWithDecisionRatio, tier).toBe(1);
    }
    expect(coverage.get('payments /payments')!.arrivals).toBeGreaterThan(100);
  });

  it('matches what a client sampling a tenth of its traces leaves, the servers keeping their keyed spans', () => {
    const scenario = whole();
    scenario.sampling = { ratioByService: { checkout: 0.1 }, keyedSpansAlways: SERVERS };
    const { spans, all, dropped, delivered } = sampledRun(scenario);
    // The simulator's record is exact: what it delivered is the unsampled run less what it dropped.
    expect(spans.map(spanId).sort()).toEqual(
      all
        .map(spanId)
        .filter((id) => !dropped.has(id))
        .sort(),
    );

    const coverage = detect(inPayloads(spans));
    // Every pair of spans that could match ends within seconds of each other, well inside the
    // allowed lateness, and the spans come in start order: the join sees what a whole-set count
    // sees, so the tolerance is none. Keys come back after the lateness only in orders' redrives,
    // counted again as the truth's episodes say.
    const truth = coverageTruth(delivered, LATENESS);
    for (const [tier, counts] of truth) expect(countsOf(coverage.get(tier)!), tier).toEqual(counts);

    // And what that means: payments keeps every decision, sees one send in ten of its callers.
    const payments = coverage.get('payments /payments')!;
    expect(payments.arrivalsWithDecisionRatio).toBe(1);
    expect(payments.requestsWithSendRatio).toBeGreaterThan(0.05);
    expect(payments.requestsWithSendRatio).toBeLessThan(0.15);
    expect(payments.keysFullyVisibleRatio).toBeLessThan(0.15);
    // Ledger's caller is payments, whose keyed spans are all kept.
    expect(coverage.get('ledger /ledger/entries')!.requestsWithSendRatio).toBe(1);
  });

  it('estimates the same ratios from the default sample of one key in eight, exactly that sample’s counts', () => {
    const scenario = whole();
    scenario.sampling = { ratioByService: { checkout: 0.1 }, keyedSpansAlways: SERVERS };
    const { spans, delivered } = sampledRun(scenario);
    const oneIn = defaultDetectorConfig().coverageKeysOneIn;
    expect(oneIn).toBe(8);
    const sampled = detect(inPayloads(spans), oneIn);
    const mapping = defaultMapping();
    const inSample = delivered.filter((attempt) => coversKey(partitionKey(attempt, mapping), oneIn));
    // Whole keys, the same ones whatever the order: the sample's counts are exactly its truth's.
    for (const [tier, counts] of coverageTruth(inSample, LATENESS))
      expect(countsOf(sampled.get(tier)!), tier).toEqual(counts);
    const full = coverageTruth(delivered, LATENESS);
    for (const [tier, counts] of full) {
      const figures = sampled.get(tier)!;
      expect(figures.keysOneIn).toBe(8);
      // About an eighth of the keys, and ratios within three standard errors of every key's: the
      // error of a share estimated from n sampled items (a tier of a few hundred keys gives a few
      // dozen, so a few points either way).
      expect(figures.keys / counts.keys, tier).toBeGreaterThan(0.08);
      expect(figures.keys / counts.keys, tier).toBeLessThan(0.18);
      const within = (estimate: number | null, part: number, whole: number, n: number) => {
        const share = part / whole;
        const error = 3 * Math.sqrt((share * (1 - share)) / n) + 1e-9;
        expect(Math.abs(estimate! - share), `${tier}: ${estimate} against ${share}`).toBeLessThanOrEqual(
          error,
        );
      };
      within(figures.requestsWithSendRatio, counts.requestsWithSend, counts.requests, figures.requests);
      within(figures.keysFullyVisibleRatio, counts.keysFullyVisible, counts.keys, figures.keys);
    }
  });

  it('gives the same figures whatever the order, split and redelivery of the spans within the lateness', () => {
    const scenario = whole();
    scenario.sampling = { ratioByService: { checkout: 0.1 }, keyedSpansAlways: SERVERS };
    const { spans } = simulate(scenario);
    const inOrder = detect(inPayloads(spans));
    // Each span is delayed by up to 3 s, a third of the allowed lateness, then redelivered at 10%.
    let seed = 7;
    const random = () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed / 2 ** 32;
    };
    const delayed = spans
      .map((span) => ({ span, at: span.startTimeUnixMillis + random() * 3000 }))
      .sort((a, b) => a.at - b.at)
      .map(({ span }) => span);
    const permuted = detect(splitIntoPayloads(duplicateSome(delayed, 0.1, 11), 400, 13));
    expect(delayed.map(spanId)).not.toEqual(spans.map(spanId));
    expect(permuted).toEqual(inOrder);
  });

  it('sees keys not fully visible when resends start traces of their own, sampled a tenth each', () => {
    // Every service follows the client's decision: a dropped send's trace is dropped whole.
    const scenario = scenarios.slowTail({ requests: 3000 });
    scenario.services[0]!.latency = { medianMillis: 900, p99Millis: 2600 };
    scenario.services[0]!.client.retriesInNewTrace = true;
    scenario.sampling = { ratioByService: { checkout: 0.1 } };
    const { spans, all, dropped, delivered } = sampledRun(scenario);
    const coverage = detect(inPayloads(spans)).get('payments /payments')!;

    // Per key, from the unsampled run: the resend counts of its sends, and which were dropped.
    const sendsOf = new Map<string, { resendCount: number; dropped: boolean }[]>();
    for (const attempt of extractAttempts(all, defaultMapping()).attempts) {
      if (attempt.kind !== 'client') continue;
      const list = sendsOf.get(attempt.key) ?? [];
      list.push({ resendCount: attempt.resendCount, dropped: dropped.has(spanId(attempt)) });
      sendsOf.set(attempt.key, list);
    }
    const seen = [...sendsOf.values()].filter((sends) => sends.some((send) => !send.dropped));
    const whole = seen.filter((sends) => sends.every((send) => !send.dropped));
    // A dropped send leaves evidence only when a later send of its key was kept: the gap in the
    // resend counts. Dropped sends after the last one kept (the key's last tries) leave none.
    const gapped = seen.filter((sends) => {
      const kept = Math.max(...sends.filter((send) => !send.dropped).map((send) => send.resendCount));
      return sends.some((send) => send.dropped && send.resendCount < kept);
    });
    expect(gapped.length).toBeGreaterThan(5);
    expect(seen.length - whole.length).toBeGreaterThan(gapped.length);

    expect(coverage.keys).toBe(seen.length);
    expect(coverage.keysFullyVisible).toBe(seen.length - gapped.length);
    expect(coverage.keysFullyVisibleRatio).toBeLessThan(1);
    // Against the truth restricted to what the spans can show, and the whole-set count.
    expect(countsOf(coverage)).toEqual(coverageTruth(delivered, LATENESS).get('payments /payments'));
    expect(coverage.keysFullyVisible).toBeGreaterThanOrEqual(whole.length);
  });
});
