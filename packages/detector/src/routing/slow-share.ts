import { LATENCY_BOUNDS_MILLIS, LATENCY_BUCKETS } from '@keyscope/attempts';

/**
 * How slow a node was against others, read from latency histograms (`NodeActivity.latency`) as the
 * share of spans that lasted past a bound others rarely reach, not as a ratio of quantiles: real
 * service latency is lognormal, so a healthy node's per-second p90 over ~10 spans wanders by a
 * factor of four, while a browned-out node's spans are clipped at its callers' timeout (the server
 * span ends when the caller hangs up), which caps its p90 near that timeout, and the retries that
 * come back to it add spans answered at once. How many of its spans lasted past what others rarely
 * reach does not wander that way: a healthy node of median 0.3 s takes 1 s or more for ~6% of its
 * spans; a node slowed past a 2 s timeout, for most of them.
 */
export interface SlowShare {
  /** The lowest histogram bound at most RARE_SHARE of the others' spans lasted. */
  readonly boundMillis: number;
  /** The node's spans at or past the bound, and their share of its spans. */
  readonly spans: number;
  readonly share: number;
  /** The share of the others' spans at or past the bound. */
  readonly otherShare: number;
  /**
   * That share read with one more such span: ten spans of which none lasted past the bound say
   * the bound is rare, not that any span of the node past it is infinitely many times as many.
   */
  readonly otherShareBound: number;
}

/** Others "rarely reach" a bound when at most this share of their spans lasted past it. */
const RARE_SHARE = 0.2;

/** The node's spans in `own` against `other`'s at the bound `other` rarely reaches; undefined if either is empty. */
export function slowShareOf(own: readonly number[], other: readonly number[]): SlowShare | undefined {
  const ownTotal = spansFrom(own, 0);
  const otherTotal = spansFrom(other, 0);
  if (ownTotal === 0 || otherTotal === 0) return undefined;
  // Bucket i holds the spans from bound i - 1 up to bound i: those past bound b are buckets b + 1 on.
  let bound = 0;
  while (bound < LATENCY_BOUNDS_MILLIS.length - 1 && spansFrom(other, bound + 1) > RARE_SHARE * otherTotal)
    bound++;
  const spans = spansFrom(own, bound + 1);
  const otherSpans = spansFrom(other, bound + 1);
  return {
    boundMillis: LATENCY_BOUNDS_MILLIS[bound]!,
    spans,
    share: spans / ownTotal,
    otherShare: otherSpans / otherTotal,
    otherShareBound: (otherSpans + 1) / (otherTotal + 1),
  };
}

/**
 * Whether `own` lasted past the bound `other` rarely reaches `ratio` times as often as `other`
 * did (`otherShareBound`), on at least `minSpans` spans, and by more than chance: `sigmas`
 * standard deviations (Poisson) above the spans `other`'s share expects of as many as `own`'s. The
 * test a `latency_spike` puts to each second and, again, to the whole run of seconds, against its
 * peers and its own past: a healthy node's share past a bound wanders as much as its few spans
 * let it (6 of 50 past 1 s against 3 expected is a ratio of 2 and chance), a browned-out node's
 * does not.
 */
export function slowerThan(
  own: readonly number[],
  other: readonly number[],
  test: { ratio: number; minSpans: number; sigmas: number },
): boolean {
  const slow = slowShareOf(own, other);
  if (slow === undefined || slow.spans < test.minSpans || slow.share < test.ratio * slow.otherShareBound)
    return false;
  const expected = (slow.spans / slow.share) * slow.otherShareBound;
  return slow.spans - expected >= test.sigmas * Math.sqrt(expected);
}

/** How many of `counts`' spans lasted `boundMillis` (a histogram bound) or longer. */
export function spansPast(counts: readonly number[], boundMillis: number): number {
  return spansFrom(counts, LATENCY_BOUNDS_MILLIS.indexOf(boundMillis) + 1);
}

/** The share of `counts`' spans that lasted `boundMillis` (a histogram bound) or longer. */
export function shareFrom(counts: readonly number[], boundMillis: number): number {
  const total = spansFrom(counts, 0);
  return total === 0 ? 0 : spansFrom(counts, LATENCY_BOUNDS_MILLIS.indexOf(boundMillis) + 1) / total;
}

/** What a `latency_spike` is described by: its window, and how slow its node was then. */
export interface SlowdownFigures {
  readonly startUnixMillis: number;
  readonly endUnixMillis: number;
  /** How far back the node's own past was read. */
  readonly baselineMillis: number;
  /** The node against its other nodes over the window. */
  readonly peers: SlowShare;
  /** The node's share past the same bound over the `baselineMillis` before. */
  readonly pastShare: number;
}

/**
 * A `latency_spike` in figures a dashboard shows: the share of the node's server spans that lasted
 * the bound or longer over the event's seconds (UTC), against its other nodes over the same
 * seconds and its own `baselineMillis` before, at the bound its other nodes rarely reached.
 */
export function slowdownDescription(service: string, node: string, event: SlowdownFigures): string {
  const { startUnixMillis, endUnixMillis, peers, pastShare } = event;
  return `${percent(peers.share)} of ${service} server spans on node ${node} took ${seconds(
    peers.boundMillis,
  )} or more in ${clock(startUnixMillis)}–${clock(endUnixMillis)} UTC (${seconds(
    endUnixMillis - startUnixMillis,
  )}), against ${percent(peers.otherShare)} on its other nodes and ${percent(pastShare)} in its ${seconds(
    event.baselineMillis,
  )} before`;
}

function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}

/** A duration for a sentence, two significant digits: `0.25 s`, `1 s`, `15 s`. */
function seconds(millis: number): string {
  return `${Number((millis / 1000).toPrecision(2))} s`;
}

/** The time of day of an instant, UTC, to the second: `12:00:03`. */
function clock(unixMillis: number): string {
  return new Date(unixMillis).toISOString().slice(11, 19);
}

/** Spans in histogram buckets `from` and up. */
function spansFrom(counts: readonly number[], from: number): number {
  let sum = 0;
  for (let i = from; i < LATENCY_BUCKETS; i++) sum += counts[i] ?? 0;
  return sum;
}
