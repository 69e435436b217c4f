import type { Attempt } from '@keyscope/attempts';
import { SlotTable } from '../memory/slot-table.ts';
import { tierName } from '../rules/evaluate-key.ts';
import { type InferredDecision, inferredRepeatsOf, isInferredDecision } from './replay-header.ts';
import { INFERRED_REPEATS, type ScopeReport, type TierStats } from './scope-report.ts';

/**
 * Whether the evidence coverage counts `partitionKey`: one key in `oneIn`, by a hash of the key
 * (FNV-1a over alternate characters in two lanes, which halves its serial chain, then a murmur3
 * finaliser so that the low bits mix), so the sample is the same keys whatever order their spans
 * come in and on whichever instance judges them. Coverage is a ratio, and a sample of whole keys
 * estimates it at a fraction of the join's cost per attempt.
 */
export function coversKey(partitionKey: string, oneIn: number): boolean {
  if (oneIn <= 1) return true;
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  const length = partitionKey.length;
  let i = 0;
  for (; i + 1 < length; i += 2) {
    a = Math.imul(a ^ partitionKey.charCodeAt(i), 0x01000193);
    b = Math.imul(b ^ partitionKey.charCodeAt(i + 1), 0x01000193);
  }
  if (i < length) a = Math.imul(a ^ partitionKey.charCodeAt(i), 0x01000193);
  let hash = a ^ Math.imul(b, 0x9e3779b1);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) % oneIn === 0;
}

/**
 * Evidence coverage (`TierCoverage`) counted by a bounded event-time join: each keyed attempt
 * registers what it waits for (an arrival its decision, a request with a parent its send, a send
 * its server span) and resolves what waits for it, among the open attempts of its key whose end is
 * within the allowed lateness of its own. The attempts of a key are counted in clusters: in order
 * of end, cut where one ends more than the lateness after the one before. A cluster is final once
 * the watermark is twice the lateness past its newest end (an attempt that could still join it
 * ends within the lateness of it, and has arrived by then); then each of its attempts is counted
 * into its tier's sums, the key once at each tier it reached (`keys`, `keysFullyVisible`), and all
 * of it forgotten: "keys seen whole within the allowed lateness", so a key whose attempts come
 * again after a pause longer than the lateness counts again.
 *
 * The open attempts are held per key (a window), and the windows in a ring of buckets of a tenth
 * of the lateness, by their newest end plus the lateness: a window is visited when its bucket
 * is final, its final clusters counted and the rest moved to a later bucket. So the ring costs per
 * key, not per attempt; a cluster is counted at most a bucket after it is final.
 *
 * What it holds is bounded by the lateness window, never by the retry horizon: the attempts of
 * keys that had one within twice the lateness of the watermark, and a small map from (client
 * service, target) to the tier its answered sends landed at. A key whose attempts never pause is
 * counted in pieces past HOT_WINDOW attempts; past `maxEntries` open attempts, the windows of the
 * oldest bucket are counted early (`evictedEntries`).
 *
 * Within the lateness the sums do not depend on the order attempts arrive in: matches and
 * clusters are functions of the attempts' own times, and an attempt no later than the lateness
 * arrives before anything it belongs with is counted.
 */
export class EvidenceCoverage {
  private readonly bucketMillis: number;
  /** Buckets in the ring: twice the lateness (a window closes that long after its newest end), and margin. */
  private readonly ringSize: number;
  private readonly slots: KeyWindow[][];
  /** The bucket each ring slot holds; NaN when none. */
  private readonly slotBucket: Float64Array;
  /**
   * Buckets count from the first attempt's end, so that they stay small integers (a millisecond
   * epoch divided by a bucket is past the engine's small-integer range).
   */
  private origin = Number.NaN;
  /** Buckets below it are final; the ring holds buckets from it, `ringSize` of them. */
  private finalBelow = Number.NaN;
  /** Windows placed below the ring (their newest attempt already final), visited by `advance`. */
  private overdue: KeyWindow[] = [];
  /** Windows placed beyond the ring (the watermark moved far within one batch), placed by `advance`. */
  private far: KeyWindow[] = [];
  private due: KeyWindow[] = [];
  /**
   * Keys with open entries, by the detector's slot for the key (a small integer, cheaper to look
   * up than the key). `detach` drops a slot the detector gives to another key.
   */
  private readonly windows = new SlotTable<KeyWindow>();
  /** Keys counted since a route was last learned: routes are learned from one key in LEARN_EVERY. */
  private sinceLearned = 0;
  /** Where answered sends from a client service to a target landed: a tier, or null when several. */
  private readonly routes = new Map<string, Map<string, TierCounts | null>>();
  private routeCount = 0;
  /** The route `learnRoute` last confirmed. */
  private learnedService = '';
  private learnedTarget = '';
  private learnedTier: TierCounts | null = null;
  /**
   * The tier counts looked up, by service then operation, and the last one. The overflow bucket's
   * are not remembered by name: a URL-named tier past `maxTiers` would keep its name here forever.
   */
  private readonly tiers = new Map<string, Map<string, TierCounts>>();
  private lastService = '';
  private lastOperation = '';
  private lastTier: TierCounts | undefined;
  private openEntries = 0;
  private evicted = 0;
  /** Final entries and counted windows, to reuse (at most POOLED of each). */
  private readonly freeEntries: Entry[] = [];
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
    this.bucketMillis = Math.max(1, allowedLatenessMillis / BUCKETS_PER_LATENESS);
    this.ringSize = Math.ceil((2 * allowedLatenessMillis) / this.bucketMillis) + 3;
    this.slots = Array.from({ length: this.ringSize }, () => []);
    this.slotBucket = new Float64Array(this.ringSize).fill(Number.NaN);
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
    let kind: number;
    let tier: TierCounts | null = null;
    if (attempt.kind === 'client') kind = CLIENT;
    else if (attempt.kind === 'effect') return;
    else {
      kind = attempt.kind === 'arrival' ? ARRIVAL : SERVER;
      tier = this.tierOf(attempt.placement.service, attempt.operation);
    }
    const entry = (this.freeEntries.pop() ?? new Entry()).reset(attempt, kind, tier);
    const window = this.windows.get(slot);
    if (window === undefined) {
      const opened = (this.freeWindows.pop() ?? new KeyWindow()).reset(slot, seenBefore);
      this.windows.add(slot, opened);
      opened.hold(entry, this.allowedLatenessMillis);
      this.place(opened);
    } else window.hold(entry, this.allowedLatenessMillis);
    if (++this.openEntries > this.maxEntries) this.evictOldest();
  }

  /** Counts every attempt the watermark made final. */
  advance(watermarkUnixMillis: number): void {
    if (Number.isNaN(this.origin)) return;
    const limit = this.bucketOf(watermarkUnixMillis - this.allowedLatenessMillis) - 1;
    if (limit >= this.finalBelow) {
      const due = this.due;
      // Past 2^53 a bucket index no longer steps by one: visit the slots instead of the buckets.
      if (limit - this.finalBelow >= this.ringSize || !Number.isSafeInteger(limit)) {
        for (let slot = 0; slot < this.ringSize; slot++)
          if (this.slotBucket[slot]! <= limit) this.takeSlot(slot, due);
      } else {
        for (let bucket = this.finalBelow; bucket <= limit; bucket++) {
          const slot = this.slotOf(bucket);
          if (this.slotBucket[slot] === bucket) this.takeSlot(slot, due);
        }
      }
      this.finalBelow = limit + 1;
      for (let i = 0; i < due.length; i++) this.visit(due[i]!, limit);
      due.length = 0;
    }
    if (this.overdue.length > 0) {
      const overdue = this.overdue;
      this.overdue = [];
      for (const window of overdue) this.visit(window, limit);
    }
    if (this.far.length > 0) {
      const far = this.far;
      this.far = [];
      for (const window of far) this.place(window);
    }
  }

  /** Counts every open attempt: the input ended. */
  finalizeAll(): void {
    const windows = new Set<KeyWindow>([...this.overdue, ...this.far]);
    for (const slot of this.slots) for (const window of slot) windows.add(window);
    for (const window of windows) this.finalizeWindow(window);
    for (let slot = 0; slot < this.ringSize; slot++) {
      this.slots[slot]!.length = 0;
      this.slotBucket[slot] = Number.NaN;
    }
    this.overdue = [];
    this.far = [];
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

  /** Forgets the tier counts looked up: the scope report replaced them (`importState`). */
  forgetTiers(): void {
    this.tiers.clear();
    this.lastTier = undefined;
  }

  private tierOf(service: string, operation: string): TierCounts {
    if (this.lastTier !== undefined && service === this.lastService && operation === this.lastOperation)
      return this.lastTier;
    let byOperation = this.tiers.get(service);
    if (byOperation === undefined) this.tiers.set(service, (byOperation = new Map()));
    let tier = byOperation.get(operation);
    if (tier === undefined) {
      tier = this.scopes.tierOf(tierName(service, operation), service, operation);
      if (!this.scopes.isOverflow(tier)) byOperation.set(operation, tier);
    }
    this.lastService = service;
    this.lastOperation = operation;
    this.lastTier = tier;
    return tier;
  }

  private bucketOf(unixMillis: number): number {
    return Math.floor((unixMillis - this.origin) / this.bucketMillis);
  }

  private slotOf(bucket: number): number {
    const slot = bucket % this.ringSize;
    return slot < 0 ? slot + this.ringSize : slot;
  }

  /**
   * Puts the window in the bucket where it may close: its newest attempt's end plus the lateness,
   * the latest end an attempt that still joins one of its clusters can have.
   */
  private place(window: KeyWindow): void {
    if (Number.isNaN(this.origin)) {
      this.origin = window.maxEndUnixMillis;
      this.finalBelow = 0;
    }
    const bucket = this.bucketOf(window.maxEndUnixMillis + this.allowedLatenessMillis);
    if (bucket < this.finalBelow) this.overdue.push(window);
    else if (bucket >= this.finalBelow + this.ringSize) this.far.push(window);
    else {
      // The ring holds buckets finalBelow.. finalBelow + ringSize - 1 only: a slot is empty or this bucket's.
      const slot = this.slotOf(bucket);
      this.slotBucket[slot] = bucket;
      this.slots[slot]!.push(window);
    }
  }

  private takeSlot(slot: number, into: KeyWindow[]): void {
    const windows = this.slots[slot]!;
    for (let i = 0; i < windows.length; i++) into.push(windows[i]!);
    windows.length = 0;
    this.slotBucket[slot] = Number.NaN;
  }

  /** A window whose bucket came: its final clusters are counted, the rest waits in a later bucket. */
  private visit(window: KeyWindow, limit: number): void {
    this.countClusters(window, limit, false);
    if (window.openCount() === 0) this.release(window);
    else this.place(window);
  }

  private evictOldest(): void {
    let oldest = -1;
    for (let slot = 0; slot < this.ringSize; slot++) {
      if (this.slots[slot]!.length === 0) continue;
      if (oldest === -1 || this.slotBucket[slot]! < this.slotBucket[oldest]!) oldest = slot;
    }
    const windows: KeyWindow[] = [];
    if (this.overdue.length > 0) {
      windows.push(...this.overdue);
      this.overdue = [];
    } else if (oldest !== -1) this.takeSlot(oldest, windows);
    else {
      windows.push(...this.far);
      this.far = [];
    }
    for (const window of windows) {
      this.evicted += window.openCount();
      this.finalizeWindow(window);
    }
  }

  private finalizeWindow(window: KeyWindow): void {
    this.countClusters(window, Number.POSITIVE_INFINITY, true);
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
   * newest end is twice the lateness behind the watermark (`limit`, the last final bucket): an
   * attempt that could still join it would end within the lateness of it, and have arrived by
   * then. So clusters, like matches, are the same whatever order the attempts came in. A window
   * past HOT_WINDOW attempts that never pause is counted in pieces of its attempts already final.
   */
  private countClusters(window: KeyWindow, limit: number, all: boolean): void {
    const entries = window.sortedByEnd();
    const held = window.openCount();
    const lateness = this.allowedLatenessMillis;
    let from = 0;
    while (from < held) {
      let to = from + 1;
      while (to < held && entries[to]!.endUnixMillis - entries[to - 1]!.endUnixMillis <= lateness) to++;
      if (!all && this.bucketOf(entries[to - 1]!.endUnixMillis + lateness) > limit) break;
      this.countCluster(window, entries, from, to);
      from = to;
    }
    if (!all && held - from > HOT_WINDOW) {
      let to = from;
      while (to < held && this.bucketOf(entries[to]!.endUnixMillis + lateness) <= limit) to++;
      if (to > from) this.countCluster(window, entries, from, to);
      from = to;
    }
    window.dropFirst(from);
  }

  /** Counts the attempts `from`..`to` of the window's sorted entries, and their key once. */
  private countCluster(window: KeyWindow, entries: readonly Entry[], from: number, to: number): void {
    window.startCount();
    this.countInferredRepeats(entries, from, to);
    for (let i = from; i < to; i++) this.finalize(entries[i]!, window);
    this.countKey(window);
  }

  /**
   * The cluster's repeats of the key in one store on one node, judged from HTTP responses alone,
   * per tier (replay-header.ts): most clusters hold no such decision, or one.
   */
  private countInferredRepeats(entries: readonly Entry[], from: number, to: number): void {
    let inferred: Entry[] | null = null;
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

  /** Counts one attempt's verdicts into its tier, and what its key's count needs into its window. */
  private finalize(entry: Entry, window: KeyWindow): void {
    this.openEntries--;
    const tier = entry.tier;
    if (entry.kind === CLIENT) {
      window.sendFinal(entry);
      if ((entry.flags & ANSWERED) !== 0) {
        this.count(tier!, SENDS);
        this.count(tier!, SENDS_WITH_SERVER_SPAN);
      }
    } else {
      window.requestAt(tier!);
      let complete = true;
      if (entry.kind === ARRIVAL) {
        this.count(tier!, ARRIVALS);
        if ((entry.flags & DECIDED) !== 0) this.count(tier!, ARRIVALS_WITH_DECISION);
        else complete = false;
      }
      // A decision under an arrival is the arrival's request, counted with it.
      if (entry.parentSpanId !== '' && (entry.flags & IS_DECISION) === 0) {
        this.count(tier!, REQUESTS);
        if ((entry.flags & HAS_SEND) !== 0) this.count(tier!, REQUESTS_WITH_SEND);
        else complete = false;
      }
      if (!complete) window.hide(tier!);
    }
    entry.decision = null;
    if (this.freeEntries.length < POOLED) this.freeEntries.push(entry);
  }

  /** Counts the key of a cluster at each tier it had a request at. */
  private countKey(window: KeyWindow): void {
    const learns = ++this.sinceLearned >= LEARN_EVERY;
    for (let at = 0; at < window.routeCount; at++) {
      const route = window.routes[at]!;
      let tier: TierCounts | null | undefined = route.tier;
      if (tier !== null) {
        if (learns) {
          this.learnRoute(route.service, route.target, tier);
          this.sinceLearned = 0;
        }
      } else if (!route.ambiguous) tier = this.routes.get(route.service)?.get(route.target);
      if (tier === null || tier === undefined) continue;
      if (route.unanswered > 0) {
        this.count(tier, SENDS, route.unanswered);
        window.hide(tier);
      }
      if (resendGap(route.resends, window.continues)) window.hide(tier);
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

  private learnRoute(service: string, target: string, tier: TierCounts): void {
    if (tier === this.learnedTier && service === this.learnedService && target === this.learnedTarget) return;
    let byTarget = this.routes.get(service);
    const known = byTarget?.get(target);
    if (known === undefined) {
      if (this.routeCount >= MAX_ROUTES) return;
      if (byTarget === undefined) this.routes.set(service, (byTarget = new Map()));
      byTarget.set(target, tier);
      this.routeCount++;
    } else if (known !== tier) {
      if (known !== null) byTarget!.set(target, null);
      return;
    }
    this.learnedService = service;
    this.learnedTarget = target;
    this.learnedTier = tier;
  }
}

/** A tier's aggregates, whose `coverage` holds its live `COVERAGE_COUNTS`. */
type TierCounts = TierStats;

const ARRIVALS = 0;
const ARRIVALS_WITH_DECISION = 1;
const REQUESTS = 2;
const REQUESTS_WITH_SEND = 3;
const KEYS = 4;
const KEYS_FULLY_VISIBLE = 5;
const SENDS = 6;
const SENDS_WITH_SERVER_SPAN = 7;

const BUCKETS_PER_LATENESS = 10;
/**
 * Routes are learned from one counted key in this many: a route's tier shows in every key sent on
 * it, and looking it up for every key would cost more than the rest of the key's count.
 */
const LEARN_EVERY = 16;
/** Final entries and windows kept for reuse. */
const POOLED = 4096;
/** (client service, target) pairs learned; past it, unanswered sends on new pairs count nowhere. */
const MAX_ROUTES = 10_000;
/** Open attempts of one key past which it indexes them by span id instead of scanning them. */
const INDEXED_WINDOW = 32;
/** Open attempts of one key past which a key that never pauses is counted in pieces. */
const HOT_WINDOW = 256;
/** Resend counts above it are not checked for gaps (one bit each in a 31-bit mask). */
const MAX_CHECKED_RESEND = 30;

const ARRIVAL = 1;
const SERVER = 2;
const CLIENT = 3;

/** An arrival with a server attempt under it. */
const DECIDED = 1;
/** A server attempt under an arrival: the arrival's decision, not a request of its own. */
const IS_DECISION = 2;
/** A request under a keyed send. */
const HAS_SEND = 4;
/** A send with a server-side span under it. */
const ANSWERED = 8;

/** One open attempt. Pooled: reused once final, so the join allocates nothing per attempt. */
class Entry {
  traceId = '';
  spanId = '';
  parentSpanId = '';
  endUnixMillis = 0;
  kind = 0;
  flags = 0;
  /** A server-side attempt's tier; a send's, once a server-side span under it matched. */
  tier: TierCounts | null = null;
  service = '';
  target = '';
  resendCount = 0;
  /** A `miss` or `hit` read from an HTTP response: counted for the tier's replay header. */
  decision: InferredDecision | null = null;

  reset(attempt: Attempt, kind: number, tier: TierCounts | null): this {
    this.traceId = attempt.traceId;
    this.spanId = attempt.spanId;
    this.parentSpanId = attempt.parentSpanId;
    this.endUnixMillis = attempt.endUnixMillis;
    this.kind = kind;
    this.flags = 0;
    this.tier = tier;
    this.decision = isInferredDecision(attempt) ? attempt : null;
    if (attempt.kind === 'client') {
      this.service = attempt.placement.service;
      this.target = attempt.target;
      this.resendCount = attempt.resendCount;
    }
    return this;
  }
}

/** One client service's sends of a key to one target, as its window saw them. */
class Route {
  service = '';
  target = '';
  /** The tier its answered sends landed at; null while none did, or when they landed at several. */
  tier: TierCounts | null = null;
  ambiguous = false;
  unanswered = 0;
  /** Bit n: a send with resend count n. */
  resends = 0;

  reset(service: string, target: string): this {
    this.service = service;
    this.target = target;
    this.tier = null;
    this.ambiguous = false;
    this.unanswered = 0;
    this.resends = 0;
    return this;
  }

  sendFinal(send: Entry): void {
    if (send.resendCount >= 0 && send.resendCount <= MAX_CHECKED_RESEND)
      this.resends |= 1 << send.resendCount;
    if ((send.flags & ANSWERED) === 0) {
      this.unanswered++;
      return;
    }
    if (this.ambiguous || this.tier === send.tier) return;
    if (this.tier === null) this.tier = send.tier;
    else {
      this.tier = null;
      this.ambiguous = true;
    }
  }
}

/** A key's open attempts, and what its final ones said. Pooled like `Entry`. */
class KeyWindow {
  slot = -1;
  /** Its slot went to another key: the window is no longer the slot's. */
  detached = false;
  /**
   * The key had attempts before this window (counted then), so the resend counts it sees may
   * start after 0 (a redrive that goes on counting).
   */
  continues = false;
  /** The newest end among its attempts: the window's bucket. */
  maxEndUnixMillis = Number.NEGATIVE_INFINITY;
  /**
   * Its open attempts: the first `size` (the arrays keep their length across keys, as setting a
   * length of 0 would free their storage and the next key allocate it again).
   */
  private readonly entries: Entry[] = [];
  private size = 0;
  /** Whether `entries` is in order of end. */
  private sorted = true;
  /** By span id and by parent span id, once the key holds more than INDEXED_WINDOW open attempts. */
  private index: Map<string, Entry[]> | undefined;
  /** Tiers the key had a request at, the first `tierCount`. */
  readonly tiers: TierCounts[] = [];
  tierCount = 0;
  /** Tiers where some of the key's evidence is missing, the first `hiddenCount`. */
  private readonly hidden: TierCounts[] = [];
  private hiddenCount = 0;
  /** Its sends' routes, the first `routeCount` in use; kept across keys, as almost every key has one. */
  readonly routes: Route[] = [];
  routeCount = 0;

  reset(slot: number, continues: boolean): this {
    this.slot = slot;
    this.detached = false;
    this.continues = continues;
    this.maxEndUnixMillis = Number.NEGATIVE_INFINITY;
    this.routeCount = 0;
    this.sorted = true;
    return this;
  }

  /** Empties it for reuse (what it held is counted). */
  clear(): void {
    this.size = 0;
    this.index = undefined;
    this.tierCount = 0;
    this.hiddenCount = 0;
  }

  openCount(): number {
    return this.size;
  }

  /**
   * Links the entry with its parent and children among the open attempts whose end is within the
   * lateness of its own (so that what matches does not depend on when windows close), and holds it.
   */
  hold(entry: Entry, lateness: number): void {
    const entries = this.entries;
    if (entry.endUnixMillis > this.maxEndUnixMillis) this.maxEndUnixMillis = entry.endUnixMillis;
    if (this.index !== undefined) {
      this.matchIndexed(entry, this.index, lateness);
    } else {
      for (let i = 0; i < this.size; i++) {
        const other = entries[i]!;
        if (other.spanId === entry.parentSpanId) {
          if (other.traceId === entry.traceId && near(other, entry, lateness)) link(other, entry);
        } else if (
          other.parentSpanId === entry.spanId &&
          other.traceId === entry.traceId &&
          near(other, entry, lateness)
        )
          link(entry, other);
      }
      if (this.size === INDEXED_WINDOW) {
        const index = new Map<string, Entry[]>();
        for (let i = 0; i < this.size; i++) indexEntry(index, entries[i]!);
        this.index = index;
      }
    }
    entries[this.size++] = entry;
    this.sorted = false;
    if (this.index !== undefined) indexEntry(this.index, entry);
  }

  /** Its entries in order of end, the first `openCount()` (sorted in place, once per change). */
  sortedByEnd(): readonly Entry[] {
    if (!this.sorted) {
      // Insertion sort: a window holds a handful of attempts, most already in order.
      const entries = this.entries;
      for (let i = 1; i < this.size; i++) {
        const entry = entries[i]!;
        let at = i;
        while (at > 0 && entries[at - 1]!.endUnixMillis > entry.endUnixMillis) {
          entries[at] = entries[at - 1]!;
          at--;
        }
        entries[at] = entry;
      }
      this.sorted = true;
    }
    return this.entries;
  }

  /** Drops the first `count` entries in order of end (counted). */
  dropFirst(count: number): void {
    if (count === 0) return;
    const entries = this.entries;
    if (this.index !== undefined) {
      for (let i = 0; i < count; i++) {
        const entry = entries[i]!;
        unindex(this.index, entry.spanId, entry);
        if (entry.parentSpanId !== '') unindex(this.index, entry.parentSpanId, entry);
      }
    }
    for (let i = count; i < this.size; i++) entries[i - count] = entries[i]!;
    this.size -= count;
  }

  /** Starts counting one cluster: what the key's count needs, from nothing. */
  startCount(): void {
    this.tierCount = 0;
    this.hiddenCount = 0;
    this.routeCount = 0;
  }

  private matchIndexed(entry: Entry, index: Map<string, Entry[]>, lateness: number): void {
    if (entry.parentSpanId !== '') {
      for (const other of index.get(entry.parentSpanId) ?? [])
        if (
          other.spanId === entry.parentSpanId &&
          other.traceId === entry.traceId &&
          near(other, entry, lateness)
        )
          link(other, entry);
    }
    for (const other of index.get(entry.spanId) ?? [])
      if (
        other.parentSpanId === entry.spanId &&
        other.traceId === entry.traceId &&
        near(other, entry, lateness)
      )
        link(entry, other);
  }

  requestAt(tier: TierCounts): void {
    for (let i = 0; i < this.tierCount; i++) if (this.tiers[i] === tier) return;
    this.tiers[this.tierCount++] = tier;
  }

  hide(tier: TierCounts): void {
    if (!this.isHidden(tier)) this.hidden[this.hiddenCount++] = tier;
  }

  isHidden(tier: TierCounts): boolean {
    for (let i = 0; i < this.hiddenCount; i++) if (this.hidden[i] === tier) return true;
    return false;
  }

  sendFinal(send: Entry): void {
    const routes = this.routes;
    let at = 0;
    while (
      at < this.routeCount &&
      (routes[at]!.service !== send.service || routes[at]!.target !== send.target)
    )
      at++;
    if (at === this.routeCount) {
      if (at === routes.length) routes.push(new Route());
      routes[at]!.reset(send.service, send.target);
      this.routeCount++;
    }
    routes[at]!.sendFinal(send);
  }
}

/**
 * Whether some resend count is missing: below the highest seen, or, for a key that `continues`,
 * between the lowest and the highest seen. Counts 0..n all seen are a mask of the form 0…01…1.
 */
function resendGap(resends: number, continues: boolean): boolean {
  if (resends === 0) return false;
  const from = continues ? resends >>> (31 - Math.clz32(resends & -resends)) : resends;
  return (from & (from + 1)) !== 0;
}

function near(a: Entry, b: Entry, lateness: number): boolean {
  return Math.abs(a.endUnixMillis - b.endUnixMillis) <= lateness;
}

/** `parent` is the span `child` names as its parent, in the same trace. */
function link(parent: Entry, child: Entry): void {
  if (child.kind === CLIENT) return;
  if (parent.kind === CLIENT) {
    child.flags |= HAS_SEND;
    if ((parent.flags & ANSWERED) === 0) {
      parent.flags |= ANSWERED;
      parent.tier = child.tier;
    }
  } else if (parent.kind === ARRIVAL && child.kind === SERVER) {
    parent.flags |= DECIDED;
    child.flags |= IS_DECISION;
  }
}

function indexEntry(index: Map<string, Entry[]>, entry: Entry): void {
  add(index, entry.spanId, entry);
  if (entry.parentSpanId !== '' && entry.parentSpanId !== entry.spanId) add(index, entry.parentSpanId, entry);
}

function add(index: Map<string, Entry[]>, id: string, entry: Entry): void {
  const list = index.get(id);
  if (list === undefined) index.set(id, [entry]);
  else list.push(entry);
}

function unindex(index: Map<string, Entry[]>, id: string, entry: Entry): void {
  const list = index.get(id);
  if (list === undefined) return;
  const at = list.indexOf(entry);
  if (at >= 0) list.splice(at, 1);
  if (list.length === 0) index.delete(id);
}
