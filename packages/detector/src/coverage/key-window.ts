import type { Attempt } from '@keyscope/attempts';
import { ANSWERED, childEvidence, IS_DECISION, parentEvidence, resendBit } from './coverage-rule.ts';
import { type InferredDecision, isInferredDecision } from './replay-header.ts';
import type { TierStats } from './scope-report.ts';

/** A tier's aggregates, whose `coverage` holds its live `COVERAGE_COUNTS`. */
export type TierCounts = TierStats;

/** Open attempts of one key past which it indexes them by span id instead of scanning them. */
const INDEXED_WINDOW = 32;

/** One open attempt. Pooled: reused once counted, so the join allocates nothing per attempt. */
export class OpenAttempt {
  traceId = '';
  spanId = '';
  parentSpanId = '';
  endUnixMillis = 0;
  /** Its kind for the rule (coverage-rule.ts). */
  kind = 0;
  /** What its matched parent and children showed (coverage-rule.ts: DECIDED, IS_DECISION, HAS_SEND, ANSWERED). */
  flags = 0;
  /** A server-side attempt's tier; a send's, once a server-side span under it matched. */
  tier: TierCounts | null = null;
  service = '';
  target = '';
  resendCount = 0;
  /** A `miss` or `hit` read from an HTTP response: counted for the tier's replay header. */
  decision: InferredDecision | null = null;
  /** A decision's: the tier of the arrival (its request's SERVER span) it was matched under. */
  endpoint: TierCounts | null = null;

  reset(attempt: Attempt, kind: number, tier: TierCounts | null): this {
    this.traceId = attempt.traceId;
    this.spanId = attempt.spanId;
    this.parentSpanId = attempt.parentSpanId;
    this.endUnixMillis = attempt.endUnixMillis;
    this.kind = kind;
    this.flags = 0;
    this.tier = tier;
    this.endpoint = null;
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
export class SendRoute {
  service = '';
  target = '';
  /** The tier its answered sends landed at; null while none did, or when they landed at several. */
  tier: TierCounts | null = null;
  ambiguous = false;
  unanswered = 0;
  /** The resend counts seen (coverage-rule.ts: `resendBit`). */
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

  sendCounted(send: OpenAttempt): void {
    this.resends |= resendBit(send.resendCount);
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

/** A key's open attempts, matched with each other, and what its counted ones said. Pooled like `OpenAttempt`. */
export class KeyWindow {
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
  private readonly entries: OpenAttempt[] = [];
  private size = 0;
  /** Whether `entries` is in order of end. */
  private sorted = true;
  /** By span id and by parent span id, once the key holds more than INDEXED_WINDOW open attempts. */
  private index: Map<string, OpenAttempt[]> | undefined;
  /** Tiers the key had a request at, the first `tierCount`. */
  readonly tiers: TierCounts[] = [];
  tierCount = 0;
  /** Tiers where some of the key's evidence is missing, the first `hiddenCount`. */
  private readonly hidden: TierCounts[] = [];
  private hiddenCount = 0;
  /** Its sends' routes, the first `routeCount` in use; kept across keys, as almost every key has one. */
  readonly routes: SendRoute[] = [];
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
   * Links the attempt with its parent and children among the open attempts whose end is within the
   * lateness of its own (so that what matches does not depend on when windows close), and holds it.
   */
  hold(entry: OpenAttempt, lateness: number): void {
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
        const index = new Map<string, OpenAttempt[]>();
        for (let i = 0; i < this.size; i++) indexEntry(index, entries[i]!);
        this.index = index;
      }
    }
    entries[this.size++] = entry;
    this.sorted = false;
    if (this.index !== undefined) indexEntry(this.index, entry);
  }

  /** Its entries in order of end, the first `openCount()` (sorted in place, once per change). */
  sortedByEnd(): readonly OpenAttempt[] {
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

  private matchIndexed(entry: OpenAttempt, index: Map<string, OpenAttempt[]>, lateness: number): void {
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

  sendCounted(send: OpenAttempt): void {
    const routes = this.routes;
    let at = 0;
    while (
      at < this.routeCount &&
      (routes[at]!.service !== send.service || routes[at]!.target !== send.target)
    )
      at++;
    if (at === this.routeCount) {
      if (at === routes.length) routes.push(new SendRoute());
      routes[at]!.reset(send.service, send.target);
      this.routeCount++;
    }
    routes[at]!.sendCounted(send);
  }
}

function near(a: OpenAttempt, b: OpenAttempt, lateness: number): boolean {
  return Math.abs(a.endUnixMillis - b.endUnixMillis) <= lateness;
}

/** `parent` is the span `child` names as its parent, in the same trace. */
function link(parent: OpenAttempt, child: OpenAttempt): void {
  const evidence = parentEvidence(parent.kind, child.kind);
  // A send lands at the tier of the first server-side span matched under it.
  if (evidence === ANSWERED && (parent.flags & ANSWERED) === 0) parent.tier = child.tier;
  parent.flags |= evidence;
  const childFlags = childEvidence(parent.kind, child.kind);
  if (childFlags === IS_DECISION) child.endpoint = parent.tier;
  child.flags |= childFlags;
}

function indexEntry(index: Map<string, OpenAttempt[]>, entry: OpenAttempt): void {
  add(index, entry.spanId, entry);
  if (entry.parentSpanId !== '' && entry.parentSpanId !== entry.spanId) add(index, entry.parentSpanId, entry);
}

function add(index: Map<string, OpenAttempt[]>, id: string, entry: OpenAttempt): void {
  const list = index.get(id);
  if (list === undefined) index.set(id, [entry]);
  else list.push(entry);
}

function unindex(index: Map<string, OpenAttempt[]>, id: string, entry: OpenAttempt): void {
  const list = index.get(id);
  if (list === undefined) return;
  const at = list.indexOf(entry);
  if (at >= 0) list.splice(at, 1);
  if (list.length === 0) index.delete(id);
}
