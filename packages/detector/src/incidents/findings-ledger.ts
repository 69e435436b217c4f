import { type Mapping, partitionKey } from '@keyscope/attempts';
import type { Changes } from '../detector-changes.ts';
import { findingId } from '../ids.ts';
import type { RoutingInference } from '../routing/routing-inference.ts';
import type { FindingDraft } from '../rules/evaluate-key.ts';
import {
  FINDING_CLASSES,
  type Finding,
  nodesTotalOf,
  repeatUnixMillisOf,
  storesTotalOf,
} from '../rules/finding.ts';
import { tierName } from '../tier-name.ts';
import type { IncidentBook } from './incidents.ts';

/**
 * The findings currently reported — the detector's answer to "what is wrong right now" — each
 * placed in its incident, and the settling of those incidents.
 *
 * Contract: `apply` makes a key's drafts its findings: each is placed in its incident (the book
 * reports the incidents that changed), reported in `changes` when it differs from the version
 * reported before (its signature or its incident), and the key's findings that no draft names are
 * retracted. A finding's incident is settled once routing activity is closed past its repeat plus
 * the detection horizon (`settle`), at once when its service has no activity to wait for. The
 * names its lists leave out are added to the book's `overflow` as each list grows.
 */
export class FindingsLedger {
  readonly #book: IncidentBook;
  readonly #routing: Pick<RoutingInference, 'knows' | 'detectionHorizonMillis' | 'closedUnixMillisNow'>;
  readonly #mapping: Pick<Mapping, 'keyNamespace'>;
  /** Findings reported, by id. */
  readonly #current = new Map<string, Finding>();
  /**
   * How many of `#current` each key has, by partition key. A judged key whose findings are exactly
   * its new drafts (most keys: none before, none now) has nothing to retract, and skips deriving
   * the ids of every class to look for some.
   */
  readonly #reportedPerKey = new Map<string, number>();
  /**
   * Findings placed since their incident could last be settled, by id → the closed activity time
   * at which their routing attribution is final (their repeat plus the detection horizon).
   */
  readonly #unsettled = new Map<string, number>();

  constructor(
    book: IncidentBook,
    routing: Pick<RoutingInference, 'knows' | 'detectionHorizonMillis' | 'closedUnixMillisNow'>,
    mapping: Pick<Mapping, 'keyNamespace'>,
  ) {
    this.#book = book;
    this.#routing = routing;
    this.#mapping = mapping;
  }

  /** Makes `drafts` the findings of the key (see the contract above). */
  apply(partitionKey: string, drafts: readonly FindingDraft[], changes: Changes): void {
    const current = this.#current;
    const book = this.#book;
    const next = new Set<string>();
    for (const draft of drafts) {
      next.add(draft.id);
      const before = current.get(draft.id);
      this.#countOverflow(before, draft);
      const placed = book.place(draft, changes.incidents, changes.retractedIncidents);
      this.#report(partitionKey, placed);
      this.#awaitSettling(placed, changes);
      if (
        before === undefined ||
        signatureOf(before) !== signatureOf(draft) ||
        before.incidentId !== placed.incidentId
      ) {
        changes.findings.set(placed.id, placed);
        changes.retractedFindings.delete(placed.id);
      }
    }
    if ((this.#reportedPerKey.get(partitionKey) ?? 0) === next.size) return;
    // Ids are derived from class and partition key, so what this key reported before is found
    // without remembering it per key.
    for (const findingClass of FINDING_CLASSES) {
      const id = findingId(findingClass, partitionKey);
      const before = current.get(id);
      if (next.has(id) || before === undefined) continue;
      book.remove(id, changes.incidents, changes.retractedIncidents);
      this.#unreport(partitionKey, before);
      changes.findings.delete(id);
      changes.retractedFindings.add(id);
    }
  }

  /**
   * Takes back a finding a previous run reported, as it was: placed in its incident, updated or
   * retracted by the next judgement of its key rather than reported anew, and settled by a later
   * `settle` once the restored activity's closed edge is past it.
   */
  restore(finding: Finding, changes: Changes): void {
    const placed = this.#book.place(finding, changes.incidents, changes.retractedIncidents);
    this.#report(this.#partitionKeyOf(finding), placed);
    this.#awaitSettling(placed, changes);
  }

  /**
   * Settles the incidents of findings whose routing attribution is final: activity is closed far
   * enough past their repeat that no event which could have broken their retry path is still to
   * be inferred. Run after re-judging, so a finding is settled in the incident it ends up in.
   */
  settle(changes: Changes): void {
    const closed = this.#routing.closedUnixMillisNow();
    for (const [id, finalAt] of this.#unsettled) {
      if (finalAt > closed) continue;
      this.#unsettled.delete(id);
      this.#book.settle(id, changes.incidents);
    }
  }

  /** Stops reporting findings last seen before `cutoff`; their incidents are the book's to forget. */
  forgetBefore(cutoff: number): void {
    for (const finding of this.#current.values())
      if (finding.lastSeenUnixMillis < cutoff) this.#unreport(this.#partitionKeyOf(finding), finding);
  }

  /** Adds to `into` the keys of the findings of `services`. */
  keysOfServices(services: ReadonlySet<string>, into: Set<string>): void {
    for (const finding of this.#current.values())
      if (services.has(finding.service)) into.add(this.#partitionKeyOf(finding));
  }

  /** Adds to `into` the keys of findings doubted for want of a replay at one of `tiers` (replay-header.ts). */
  keysDoubtedAt(tiers: ReadonlySet<string>, into: Set<string>): void {
    for (const finding of this.#current.values()) {
      if (
        finding.severityReason === 'replay_unseen' &&
        tiers.has(tierName(finding.service, finding.operation))
      )
        into.add(this.#partitionKeyOf(finding));
    }
  }

  /** The findings reported, in the order first reported. */
  all(): Finding[] {
    return [...this.#current.values()];
  }

  get size(): number {
    return this.#current.size;
  }

  #partitionKeyOf(finding: Finding): string {
    return partitionKey(finding.attempts[0]!, this.#mapping);
  }

  #report(partitionKey: string, finding: Finding): void {
    if (!this.#current.has(finding.id))
      this.#reportedPerKey.set(partitionKey, (this.#reportedPerKey.get(partitionKey) ?? 0) + 1);
    this.#current.set(finding.id, finding);
  }

  #unreport(partitionKey: string, finding: Finding): void {
    this.#current.delete(finding.id);
    this.#unsettled.delete(finding.id);
    const left = this.#reportedPerKey.get(partitionKey)! - 1;
    if (left === 0) this.#reportedPerKey.delete(partitionKey);
    else this.#reportedPerKey.set(partitionKey, left);
  }

  /** Leaves the finding's incident to be settled by `settle` once its attribution is final. */
  #awaitSettling(finding: Finding, changes: Changes): void {
    // Routing is inferred from activity only: without any for the service there is nothing to
    // wait for (a pipeline always has some: every SERVER span counts).
    if (this.#routing.knows(finding.service))
      this.#unsettled.set(finding.id, repeatUnixMillisOf(finding) + this.#routing.detectionHorizonMillis());
    else this.#book.settle(finding.id, changes.incidents);
  }

  /** Adds what `draft`'s lists leave out beyond what the key's finding left out before. */
  #countOverflow(before: Finding | undefined, draft: FindingDraft): void {
    const overflow = this.#book.overflow;
    const stores = draft.storesTotal - draft.stores.length;
    const nodes = draft.nodesTotal - draft.nodes.length;
    const storesBefore = before === undefined ? 0 : storesTotalOf(before) - before.stores.length;
    const nodesBefore = before === undefined ? 0 : nodesTotalOf(before) - before.nodes.length;
    if (stores > storesBefore) overflow.findingStores += stores - storesBefore;
    if (nodes > nodesBefore) overflow.findingNodes += nodes - nodesBefore;
  }
}

/** What makes two versions of one finding different enough to report the newer one. */
function signatureOf(finding: FindingDraft): string {
  return [
    finding.class,
    finding.cause,
    finding.executions,
    finding.retriedBy,
    finding.gapMillis,
    finding.stores.join(','),
    finding.nodes.join(','),
    finding.storesTotal,
    finding.nodesTotal,
    finding.tenants.join(','),
    finding.routing.affinityBroken,
    finding.routing.event?.id ?? '',
    finding.routing.event?.endUnixMillis ?? '',
    // An event can end without its end moving: the node served again in the bucket after the
    // closed edge, where an open window ended for now.
    finding.routing.event?.ended ?? '',
    finding.attempts.length,
    finding.lastSeenUnixMillis,
    finding.suspicion?.strength ?? '',
    finding.suspicion?.evidence.map((e) => `${e.kind}:${e.spanId}:${e.routingEventId ?? ''}`).join(',') ?? '',
    finding.severity,
  ].join('|');
}
