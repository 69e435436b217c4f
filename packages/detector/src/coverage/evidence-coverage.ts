import type { Attempt } from '@keyscope/attempts';
import { SlotTable } from '../memory/slot-table.ts';
import {
  CLIENT,
  coverageKindOf,
  figuresOf,
  INCOMPLETE,
  KEYS,
  KEYS_FULLY_VISIBLE,
  routeMissesEvidence,
  SENDS,
  UNCOUNTED,
} from './coverage-rule.ts';
import { KeyWindow, OpenAttempt, type TierCounts } from './key-window.ts';
import { LearnedRoutes } from './learned-routes.ts';
import { inferredRepeatsOf } from './replay-header.ts';
import { INFERRED_REPEATS, type ScopeReport } from './scope-report.ts';
import { TimerRing } from './timer-ring.ts';

export { coversKey } from './key-sample.ts';

/**
 * Evidence coverage (`TierCoverage`) counted by a bounded event-time join: each keyed attempt
 * registers what it waits for (an arrival its decision, a request with a parent its send, a send
 * its server span) and resolves what waits for it, among the open attempts of its key whose end is
 * within the allowed lateness of its own (key-window.ts). The attempts of a key are counted in
 * clusters: in order of end, cut where one ends more than the lateness after the one before. A
 * cluster is final once the watermark is twice the lateness past its newest end (an attempt that
 * could still join it ends within the lateness of it, and has arrived by then); then each of its
 * attempts is counted into its tier's sums by the rule of coverage-rule.ts, the key once at each
 * tier it reached (`keys`, `keysFullyVisible`), and all of it forgotten: "keys seen whole within
 * the allowed lateness", so a key whose attempts come again after a pause longer than the lateness
 * counts again.
 *
 * The open attempts are held per key (a window), and the windows in a ring of buckets of a tenth
 * of the lateness (timer-ring.ts), by their newest end plus the lateness: a window is visited when
 * its bucket is final, its final clusters counted and the rest moved to a later bucket. So the ring
 * costs per key, not per attempt; a cluster is counted at most a bucket after it is final.
 *
 * What it holds is bounded by the lateness window, never by the retry horizon: the attempts of
 * keys that had one within twice the lateness of the watermark, and a small map from (client
 * service, target) to the tier its answered sends landed at (learned-routes.ts). A key whose
 * attempts never pause is counted in pieces past HOT_WINDOW attempts; past `maxEntries` open
 * attempts, the windows of the oldest bucket are counted early (`evictedEntries`).
 *
 * Within the lateness the sums do not depend on the order attempts arrive in: matches and
 * clusters are functions of the attempts' own times, and an attempt no later than the lateness
 * arrives before anything it belongs with is counted.
 */
export class EvidenceCoverage {
  private readonly ring: TimerRing<KeyWindow>;
  /**
   * Keys with open entries, by the detector's slot for the key (a small integer, cheaper to look
   * up than the key). `detach` drops a slot the detector gives to another key.
   */
  private readonly windows = new SlotTable<KeyWindow>();
  private readonly routes = new LearnedRoutes();
  /**
   * The tier counts looked up, by service then operation, and the last one. The overflow bucket's
   * are not remembered by name: a URL-named tier past `maxTiers` would keep its name here forever.
   */
  private openEntries = 0;
  private evicted = 0;
  /** Counted entries and windows, to reuse (at most POOLED of each). */
  private readonly freeEntries: OpenAttempt[] = [];
  private readonly freeWindows: KeyWindow[] = [];

  /**
   * `scopes` holds each tier's live `COVERAGE_COUNTS` (`TierStats.coverage`), added to as attempts
   * become final, and is told of every tier whose counts changed (`ScopeReport.touched`).
   */
  constructor(
    private readonly allowedLatenessMillis: number,
    private readonly maxEntries: number,
    private readonly scopes: ScopeReport,
  ) {
    this.ring = new TimerRing<KeyWindow>({
      bucketMillis: Math.max(1, allowedLatenessMillis / BUCKETS_PER_LATENESS),
      // A window closes twice the lateness after its newest end.
      horizonMillis: 2 * allowedLatenessMillis,
      // Its bucket is that of the latest end an attempt that still joins one of its clusters can have.
      delayMillis: allowedLatenessMillis,
      timeOf: (window) => window.maxEndUnixMillis,
      onDue: (window) => this.visit(window),
    });
  }

  /** Attempts waiting to be final. */
  get pendingEntries(): number {
    return this.openEntries;
  }

  /** Attempts counted before they were final because `maxEntries` were open. */
  get evictedEntries(): number {
    return this.evicted;
  }

  /**
   * A keyed attempt the detector kept (not a redelivery): matched against the open attempts of its
   * key now, counted once `advance` is given a watermark the lateness past its end. `slot`: the
   * detector's for the key. `seenBefore`: the detector holds other attempts of the key; for the
   * key's first open attempt, those are of an earlier window, which may have seen the resend counts
   * this one starts after.
   */
  add(attempt: Attempt, slot: number, seenBefore: boolean): void {
    const kind = coverageKindOf(attempt.kind);
    if (kind === UNCOUNTED) return;
    const tier = kind === CLIENT ? null : this.scopes.tierAt(attempt.placement.service, attempt.operation);
    const entry = (this.freeEntries.pop() ?? new OpenAttempt()).reset(attempt, kind, tier);
    const window = this.windows.get(slot);
    if (window === undefined) {
      const opened = (this.freeWindows.pop() ?? new KeyWindow()).reset(slot, seenBefore);
      this.windows.add(slot, opened);
      opened.hold(entry, this.allowedLatenessMillis);
      this.ring.place(opened);
    } else window.hold(entry, this.allowedLatenessMillis);
    if (++this.openEntries > this.maxEntries) this.evictOldest();
  }

  /** Counts every attempt the watermark made final. */
  advance(watermarkUnixMillis: number): void {
    // A window's bucket (its newest end plus the lateness) is final a further lateness on.
    this.ring.advance(watermarkUnixMillis - this.allowedLatenessMillis);
  }

  /** Counts every open attempt: the input ended. */
  finalizeAll(): void {
    for (const window of this.ring.takeAll()) this.finalizeWindow(window);
  }

  /**
   * The detector forgot the key of `slot` (its attempts expired, or it was evicted over `maxKeys`)
   * and may give the slot to another key: the key's open attempts are counted on their own, and
   * the key's next attempt opens a window of its own.
   */
  detach(slot: number): void {
    const window = this.windows.get(slot);
    if (window === undefined) return;
    this.windows.delete(slot);
    window.detached = true;
  }

  /** A window whose bucket came: its final clusters are counted, the rest waits in a later bucket. */
  private visit(window: KeyWindow): void {
    this.countClusters(window, false);
    if (window.openCount() === 0) this.release(window);
    else this.ring.place(window);
  }

  private evictOldest(): void {
    for (const window of this.ring.takeOldest()) {
      this.evicted += window.openCount();
      this.finalizeWindow(window);
    }
  }

  private finalizeWindow(window: KeyWindow): void {
    this.countClusters(window, true);
    this.release(window);
  }

  private release(window: KeyWindow): void {
    if (!window.detached) this.windows.delete(window.slot);
    window.clear();
    if (this.freeWindows.length < POOLED) this.freeWindows.push(window);
  }

  /**
   * Counts the window's clusters that are final (`all`: every one): its attempts in order of end,
   * cut where one ends more than the lateness after the one before. A cluster is final once its
   * newest end is due in the ring (twice the lateness behind the watermark): an attempt that could
   * still join it would end within the lateness of it, and have arrived by then. So clusters, like
   * matches, are the same whatever order the attempts came in. A window past HOT_WINDOW attempts
   * that never pause is counted in pieces of its attempts already final.
   */
  private countClusters(window: KeyWindow, all: boolean): void {
    const entries = window.sortedByEnd();
    const held = window.openCount();
    const lateness = this.allowedLatenessMillis;
    let from = 0;
    while (from < held) {
      let to = from + 1;
      while (to < held && entries[to]!.endUnixMillis - entries[to - 1]!.endUnixMillis <= lateness) to++;
      if (!all && !this.ring.isDue(entries[to - 1]!.endUnixMillis)) break;
      this.countCluster(window, entries, from, to);
      from = to;
    }
    if (!all && held - from > HOT_WINDOW) {
      let to = from;
      while (to < held && this.ring.isDue(entries[to]!.endUnixMillis)) to++;
      if (to > from) this.countCluster(window, entries, from, to);
      from = to;
    }
    window.dropFirst(from);
  }

  /** Counts the attempts `from`..`to` of the window's sorted entries, and their key once. */
  private countCluster(window: KeyWindow, entries: readonly OpenAttempt[], from: number, to: number): void {
    window.startCount();
    this.countInferredRepeats(entries, from, to);
    for (let i = from; i < to; i++) this.countAttempt(entries[i]!, window);
    this.countKey(window);
  }

  /**
   * The cluster's repeats of the key in one store on one node, judged from HTTP responses alone,
   * per tier (replay-header.ts): most clusters hold no such decision, or one.
   */
  private countInferredRepeats(entries: readonly OpenAttempt[], from: number, to: number): void {
    let inferred: OpenAttempt[] | null = null;
    for (let i = from; i < to; i++) if (entries[i]!.decision !== null) (inferred ??= []).push(entries[i]!);
    if (inferred === null || inferred.length < 2) return;
    const tiers = new Set(inferred.map((entry) => entry.tier!));
    for (const tier of tiers) {
      const repeats = inferredRepeatsOf(
        inferred.filter((entry) => entry.tier === tier).map((entry) => entry.decision!),
      );
      if (repeats > 0) this.count(tier, INFERRED_REPEATS, repeats);
    }
  }

  /** Counts one attempt's figures into its tier, and what its key's count needs into its window. */
  private countAttempt(entry: OpenAttempt, window: KeyWindow): void {
    this.openEntries--;
    const tier = entry.tier;
    const figures = figuresOf(entry.kind, entry.parentSpanId, entry.flags);
    // Lowest figure first; an unanswered send has none, and no tier yet.
    for (let left = figures & ~INCOMPLETE; left !== 0; left &= left - 1)
      this.count(tier!, 31 - Math.clz32(left & -left));
    if (entry.kind === CLIENT) window.sendCounted(entry);
    else {
      if (entry.endpoint !== null) this.scopes.decisionUnder(tier!, entry.endpoint);
      window.requestAt(tier!);
      if ((figures & INCOMPLETE) !== 0) window.hide(tier!);
    }
    entry.decision = null;
    entry.endpoint = null;
    if (this.freeEntries.length < POOLED) this.freeEntries.push(entry);
  }

  /**
   * Counts the key of a cluster at each tier it had a request at. A route's unanswered sends count
   * at the tier its answered sends landed at, else at the tier learned for the route from other keys.
   */
  private countKey(window: KeyWindow): void {
    const learns = this.routes.learnsFromKey();
    for (let at = 0; at < window.routeCount; at++) {
      const route = window.routes[at]!;
      let tier: TierCounts | null | undefined = route.tier;
      if (tier !== null) {
        if (learns) this.routes.learn(route.service, route.target, tier);
      } else if (!route.ambiguous) tier = this.routes.tierOf(route.service, route.target);
      if (tier === null || tier === undefined) continue;
      if (route.unanswered > 0) this.count(tier, SENDS, route.unanswered);
      if (routeMissesEvidence(route.unanswered, route.resends, window.continues)) window.hide(tier);
    }
    const tiers = window.tiers;
    for (let i = 0; i < window.tierCount; i++) {
      const tier = tiers[i]!;
      this.count(tier, KEYS);
      if (!window.isHidden(tier)) this.count(tier, KEYS_FULLY_VISIBLE);
    }
    // A later cluster of the key goes on from this one's resend counts.
    window.continues = true;
  }

  private count(tier: TierCounts, figure: number, by = 1): void {
    tier.coverage[figure] = tier.coverage[figure]! + by;
    if (!tier.changed) this.scopes.touched(tier);
  }
}

const BUCKETS_PER_LATENESS = 10;
/** Counted entries and windows kept for reuse. */
const POOLED = 4096;
/** Open attempts of one key past which a key that never pauses is counted in pieces. */
const HOT_WINDOW = 256;
