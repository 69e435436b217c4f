import type { Attempt, ClientAttempt } from '@keyscope/attempts';
import type { COVERAGE_COUNTS } from '../../src/coverage/scope-report.ts';

/** The counts of `TierCoverage` (`COVERAGE_COUNTS`), without the ratios. */
export type CoverageCounts = Record<(typeof COVERAGE_COUNTS)[number], number>;

/**
 * The coverage figures of docs/design.md computed from a whole set of attempts at once (the
 * attempts delivered, which a test takes from the simulator's record of what it dropped), the
 * plain way: every key's attempts side by side, no window. A key's attempts form one episode
 * unless more than `episodeGapMillis` separates one from the newest before it (a redrive), as
 * the detector counts a key again once its attempts were final. By tier, as `service operation`.
 */
export function coverageTruth(
  attempts: readonly Attempt[],
  episodeGapMillis: number,
): Map<string, CoverageCounts> {
  const tiers = new Map<string, CoverageCounts>();
  const tierOf = (attempt: Attempt): CoverageCounts => {
    const name = `${attempt.placement.service} ${attempt.operation}`;
    let counts = tiers.get(name);
    if (counts === undefined) {
      counts = {
        arrivals: 0,
        arrivalsWithDecision: 0,
        requests: 0,
        requestsWithSend: 0,
        keys: 0,
        keysFullyVisible: 0,
        sends: 0,
        sendsWithServerSpan: 0,
      };
      tiers.set(name, counts);
    }
    return counts;
  };
  const byKey = new Map<string, Attempt[]>();
  for (const attempt of attempts) {
    if (attempt.kind === 'effect') continue;
    const list = byKey.get(attempt.key);
    if (list === undefined) byKey.set(attempt.key, [attempt]);
    else list.push(attempt);
  }
  for (const keyed of byKey.values()) {
    keyed.sort((a, b) => a.endUnixMillis - b.endUnixMillis);
    let episode: Attempt[] = [];
    let newest = Number.NEGATIVE_INFINITY;
    let continues = false;
    for (const attempt of keyed) {
      if (episode.length > 0 && attempt.endUnixMillis - newest > episodeGapMillis) {
        countEpisode(episode, continues, tierOf);
        episode = [];
        continues = true;
      }
      episode.push(attempt);
      newest = Math.max(newest, attempt.endUnixMillis);
    }
    countEpisode(episode, continues, tierOf);
  }
  return tiers;
}

function countEpisode(
  episode: readonly Attempt[],
  continues: boolean,
  tierOf: (attempt: Attempt) => CoverageCounts,
): void {
  const id = (traceId: string, spanId: string) => `${traceId}/${spanId}`;
  const sends = new Map<string, ClientAttempt>();
  const arrivals = new Set<string>();
  const decided = new Set<string>();
  for (const attempt of episode) {
    if (attempt.kind === 'client') sends.set(id(attempt.traceId, attempt.spanId), attempt);
    if (attempt.kind === 'arrival') arrivals.add(id(attempt.traceId, attempt.spanId));
    if (attempt.kind === 'server') decided.add(id(attempt.traceId, attempt.parentSpanId));
    // (Every pair of attempts of an episode ends within the lateness of each other in the scenarios
    // this is used for, so the detector's rule that only such pairs match needs no check here.)
  }
  const requestTiers = new Set<CoverageCounts>();
  const hidden = new Set<CoverageCounts>();
  const answeredAt = new Map<string, CoverageCounts>();
  for (const attempt of episode) {
    if (attempt.kind !== 'arrival' && attempt.kind !== 'server') continue;
    const tier = tierOf(attempt);
    requestTiers.add(tier);
    const parent = id(attempt.traceId, attempt.parentSpanId);
    if (attempt.kind === 'arrival') {
      tier.arrivals++;
      if (decided.has(id(attempt.traceId, attempt.spanId))) tier.arrivalsWithDecision++;
      else hidden.add(tier);
    }
    const isDecision = attempt.kind === 'server' && arrivals.has(parent);
    if (attempt.parentSpanId !== '' && !isDecision) {
      tier.requests++;
      if (sends.has(parent)) tier.requestsWithSend++;
      else hidden.add(tier);
    }
    if (sends.has(parent) && !answeredAt.has(parent)) answeredAt.set(parent, tier);
  }
  /** Per route (client service, target): the tier its answered sends reached, the resend counts seen. */
  const routes = new Map<string, { tier: CoverageCounts | null; resends: Set<number>; unanswered: number }>();
  for (const [sendId, send] of sends) {
    const route = `${send.placement.service}\u0000${send.target}`;
    let seen = routes.get(route);
    if (seen === undefined) routes.set(route, (seen = { tier: null, resends: new Set(), unanswered: 0 }));
    seen.resends.add(send.resendCount);
    const tier = answeredAt.get(sendId);
    if (tier === undefined) {
      seen.unanswered++;
      continue;
    }
    tier.sends++;
    tier.sendsWithServerSpan++;
    seen.tier = tier;
  }
  for (const { tier, resends, unanswered } of routes.values()) {
    if (tier === null) continue;
    tier.sends += unanswered;
    if (unanswered > 0) hidden.add(tier);
    const counts = [...resends].sort((a, b) => a - b);
    const from = continues ? counts[0]! : 0;
    if (counts.some((count, i) => count !== from + i)) hidden.add(tier);
  }
  for (const tier of requestTiers) {
    tier.keys++;
    if (!hidden.has(tier)) tier.keysFullyVisible++;
  }
}
