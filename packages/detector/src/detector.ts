import {
  type Attempt,
  type ExtractedAttempts,
  mergeExtracted,
  type NodeActivity,
  partitionKey,
} from '@keyscope/attempts';
import { type DetectorConfig, defaultDetectorConfig } from './config.ts';
import { coversKey, EvidenceCoverage } from './coverage/evidence-coverage.ts';
import { withReplayDoubt } from './coverage/replay-header.ts';
import {
  ScopeReport,
  type ScopeReportOverflow,
  type ScopeReportPage,
  type ScopeReportRow,
  type ScopeReportState,
  type SpreadLevel,
  spreadOf,
} from './coverage/scope-report.ts';
import { findingId } from './ids.ts';
import { type Incident, IncidentBook } from './incidents/incidents.ts';
import { type AttemptLog, createMemoryAttemptLog } from './memory/attempt-log.ts';
import { Interner } from './memory/interner.ts';
import { KeyTable } from './memory/key-table.ts';
import type { RoutingEvent } from './routing/routing-event.ts';
import { RoutingInference } from './routing/routing-inference.ts';
import { evaluateKey, type FindingDraft, tierName } from './rules/evaluate-key.ts';
import type { Finding } from './rules/finding.ts';
import { FINDING_CLASSES, nodesTotalOf, repeatUnixMillisOf, storesTotalOf } from './rules/finding.ts';
import { mayHideExecution } from './rules/unseen-execution.ts';

/**
 * What one call changed. Findings, incidents and routing events are upserts keyed by their
 * deterministic ids; retractions remove what later evidence disproved (a scope violation that
 * became a duplicate, an incident whose findings moved to a routing event's incident, a node_down
 * that late spans of the node showed never happened).
 */
export interface DetectorChanges {
  findings: Finding[];
  retractedFindingIds: string[];
  incidents: Incident[];
  retractedIncidentIds: string[];
  /**
   * Routing events inferred or revised since the last `tick` (new, or with a new window), and
   * those no longer inferred because late activity disproved them. An event forgotten past the
   * retry horizon is not retracted: it happened, and a store keeps it for its own retention. Only
   * `tick` and `flush` report them; absent means none.
   */
  routingEvents?: RoutingEvent[];
  retractedRoutingEventIds?: string[];
  /**
   * The node activity `ingest` counted: its batches' activity, less that of the batches delivered
   * again, summed by node and second. What a store keeps for `restore`; only `ingest` reports it.
   */
  activity?: NodeActivity[];
}

export interface DetectorStats {
  keysInMemory: number;
  suspectKeys: number;
  attempts: number;
  duplicateAttempts: number;
  /** Keys dropped from memory beyond `maxKeys` (their attempts stay in the AttemptLog). */
  evictedKeys: number;
  /** Keys rebuilt from the AttemptLog after an eviction or a restart. */
  rebuiltKeys: number;
  /**
   * Attempts not kept because their key already held `maxAttemptsPerKey` (counted before the
   * redelivery check, so a redelivered attempt of such a key counts here).
   */
  cappedAttempts: number;
  /** Keys in memory that reached `maxAttemptsPerKey`: hot keys, one constant key on many requests. */
  hotKeys: number;
  /**
   * Store and node names left out of findings' lists (`maxStoresPerFinding`) and incidents' lists
   * (`maxStoresPerIncident`), counted as each list grows past its cap: a list that leaves out 10
   * names, then 25, counts 25. Judging and the totals count every name.
   */
  findingStoresLeftOut: number;
  findingNodesLeftOut: number;
  incidentStoresLeftOut: number;
  incidentNodesLeftOut: number;
  /** Tier, node and tenant names held for the keys in memory (and some since forgotten). */
  internedNames: number;
  /** Keyed attempts the evidence coverage join holds until they are final (see `TierCoverage`). */
  coverageEntries: number;
  /** Of them, counted before the allowed lateness had passed because `maxCoverageEntries` were held. */
  coverageEvictedEntries: number;
  /** Tiers the scope report keeps one by one (at most `maxTiers`). */
  tiers: number;
  /**
   * Server attempts and arrivals whose tier was first seen past `maxTiers`: counted into the scope
   * report's overflow bucket, judged for duplicates like any other.
   */
  tierOverflowAttempts: number;
  /** Keys with a mark of a possibly lost execution, judged again when routing events near them change. */
  routingFollowUpKeys: number;
  /**
   * Of those, dropped from the follow-up (least recently judged first) because `maxKeys` were
   * followed: a routing event inferred later no longer revises their findings.
   */
  routingFollowUpDropped: number;
  watermarkUnixMillis: number;
}

export interface Detector {
  /**
   * Judges a batch of attempts; findings are emitted as soon as their evidence is complete. A
   * key with more than LARGE_KEY_ATTEMPTS attempts is re-judged here only when its attempts
   * doubled since its last judgement (or reached `maxAttemptsPerKey`), otherwise by the next
   * `tick`: so what a batch costs does not grow with the history of the keys in it.
   *
   * Several batches (payloads committed together) are judged as one, and each is checked for
   * redelivery on its own: a batch whose every attempt the AttemptLog already held, or an earlier
   * batch of the call held, is a payload delivered again, and its activity is not counted twice
   * (`DetectorChanges.activity` is what was counted).
   */
  ingest(batch: ExtractedAttempts | readonly ExtractedAttempts[]): DetectorChanges;
  /**
   * Closes the node activity the clock says is final (see `allowedLatenessMillis`), re-infers
   * routing events from it, re-groups findings whose routing changed, settles the incidents whose
   * routing attribution is now final, resolves quiet incidents and drops state older than the
   * retry horizon. `nowUnixMillis` is event time: the watermark when analysing files, the wall
   * clock in the service, which closes activity up to the lateness before it as far as activity
   * has arrived, and past the newest by as long as nothing newer has (`RoutingInference.advanceClock`):
   * so when traffic stops, incidents still settle (and page) and resolve.
   */
  tick(nowUnixMillis: number): DetectorChanges;
  /** `tick` at the watermark with all activity closed: what a finished input looks like. */
  flush(): DetectorChanges;
  /**
   * Forgets what `tick` forgets past the retry horizon — keys, their attempts in the AttemptLog
   * and their findings last seen more than `retryHorizonMillis` before `nowUnixMillis` — and does
   * nothing else `tick` does: no activity is closed, nothing re-grouped, settled or resolved, so
   * with nothing past the horizon the detector is as it was. Keys it forgets whose judgement was
   * deferred (see `ingest`) are judged first. For files read in whatever order their spans come
   * (`keyscope analyze`), on their own clock, where a full `tick` would close activity early.
   */
  expire(nowUnixMillis: number): DetectorChanges;
  findings(): Finding[];
  incidents(): Incident[];
  routingEvents(): RoutingEvent[];
  /** Every tier's row, in order of service then operation (the overflow bucket is `scopeOverflow`). */
  scopeReport(): ScopeReportRow[];
  /** Up to `limit` rows of `scopeReport()` after the tier named `after` (`tierName`; '' for the first). */
  scopeReportPage(after: string, limit: number): ScopeReportPage;
  /** The tiers past `maxTiers`, summed; null while there are none. */
  scopeOverflow(): ScopeReportOverflow | null;
  stats(): DetectorStats;
  /** Every tier's aggregates, the overflow bucket's too (see `restore`). */
  scopeState(): ScopeReportState;
  /**
   * The tiers whose aggregates changed since the last call (or since `restore`), to persist with
   * each batch: upserted by `tier` over what was saved, they make `scopeState()`.
   */
  scopeChanges(): ScopeReportState;
  /**
   * Loads what a previous run knew and the AttemptLog does not hold: the findings it reported
   * (so they are updated or retracted rather than reported anew), the node activity routing
   * events are inferred from, and the scope report. Call before the first `ingest`.
   */
  restore(previous: DetectorSnapshot): void;
}

export interface DetectorSnapshot {
  findings: readonly Finding[];
  activity?: readonly NodeActivity[];
  scopeState?: ScopeReportState;
}

export interface DetectorDependencies {
  /** Defaults to an in-memory log; the embedded service passes its SQLite one. */
  attemptLog?: AttemptLog;
}

function noop(): void {}

/** Names the interner may hold before it is first compacted. */
const MIN_INTERNER_LIMIT = 65_536;

/**
 * Attempts past which a key is judged lazily. Judging reads and sorts all of a key's attempts;
 * doing that on every batch made a key's cost grow with its history (quadratic for a hot key).
 */
const LARGE_KEY_ATTEMPTS = 64;

class Changes {
  readonly findings = new Map<string, Finding>();
  readonly retractedFindings = new Set<string>();
  readonly incidents = new Map<string, Incident>();
  readonly retractedIncidents = new Set<string>();
  routingEvents: RoutingEvent[] = [];
  retractedRoutingEvents: string[] = [];

  result(): DetectorChanges {
    for (const id of this.retractedIncidents) this.incidents.delete(id);
    const changes: DetectorChanges = {
      findings: [...this.findings.values()],
      retractedFindingIds: [...this.retractedFindings],
      incidents: [...this.incidents.values()].map((incident) => ({ ...incident })),
      retractedIncidentIds: [...this.retractedIncidents],
    };
    if (this.routingEvents.length > 0) changes.routingEvents = this.routingEvents;
    if (this.retractedRoutingEvents.length > 0)
      changes.retractedRoutingEventIds = this.retractedRoutingEvents;
    return changes;
  }
}

export function createDetector(
  config: DetectorConfig = defaultDetectorConfig(),
  dependencies: DetectorDependencies = {},
): Detector {
  const log = dependencies.attemptLog ?? createMemoryAttemptLog();
  const keys = new KeyTable(config.maxAttemptsPerKey);
  let interner = new Interner();
  /** Names interned before the interner is compacted (see compactInterner). */
  let internerLimit = MIN_INTERNER_LIMIT;
  const routing = new RoutingInference(config);
  const book = new IncidentBook(config);
  const scopes = new ScopeReport(
    config.declaredScopes ?? [],
    config.coverageKeysOneIn,
    config.maxTiers,
    config.replayHeaderMinRepeats,
  );
  const coverage = new EvidenceCoverage(config.allowedLatenessMillis, config.maxCoverageEntries, scopes);
  /** Findings currently reported, by id: the detector's answer to "what is wrong right now". */
  const current = new Map<string, Finding>();
  /**
   * How many of `current` each key has, by partition key. A judged key whose findings are exactly its new drafts
   * (most keys: none before, none now) has nothing to retract, and skips deriving the ids of
   * every class to look for some.
   */
  const reportedPerKey = new Map<string, number>();
  /** Per suspect key and tier, the spread already counted in the scope report. */
  const spreads = new Map<string, { lastSeenUnixMillis: number; tiers: Map<string, SpreadLevel> }>();
  let routingSignature = new Map<string, string>();
  /** Every routing event last reported, by id: its signature, what `tick` reports changes against. */
  let reportedEvents = new Map<string, ReportedEvent>();
  /**
   * Findings placed since their incident could last be settled, by id → the closed activity time
   * at which their routing attribution is final (their repeat plus the detection horizon).
   */
  const unsettled = new Map<string, number>();
  let watermark = Number.NEGATIVE_INFINITY;
  let attemptsSeen = 0;
  let duplicateAttempts = 0;
  let evictedKeys = 0;
  let rebuiltKeys = 0;
  let cappedAttempts = 0;
  /** Attempts of each large key at its last judgement (see LARGE_KEY_ATTEMPTS). */
  const judgedAttempts = new Map<string, number>();
  /** Large keys with attempts not yet judged: the next tick judges them. */
  const deferred = new Set<string>();
  /** The batch's kept attempts, their slots and whether their key held attempts before: see countCoverage. */
  const kept: Attempt[] = [];
  const keptSlots: number[] = [];
  const keptSeen: boolean[] = [];
  /**
   * Keys with a mark of an execution whose spans may have been lost (a send without an answer,
   * unseen-execution.ts), which only a routing event inferred later can make evidence: judged
   * again whenever a routing event of their services whose window (widened by the routing slack)
   * meets their attempts appears, moves or disappears, for as long as the key is within the retry
   * horizon. Activity can arrive late by any amount within the horizon (a shuffled backlog, a
   * redelivery), and the events it revises revise these keys' findings with them. At most
   * `maxKeys` are followed, the least recently judged dropped first (`routingFollowUpDropped`).
   */
  const awaitingRouting = new Map<string, AwaitingKey>();
  let routingFollowUpDropped = 0;

  function partitionKeyOf(attempt: Attempt): string {
    return partitionKey(attempt, config);
  }

  /** The key's compact state; when it is not in memory, rebuilt from the attempts the log holds. */
  function slotOf(partitionKey: string): number {
    const known = keys.find(partitionKey);
    if (known !== undefined) return known;
    const slot = keys.add(partitionKey);
    if (coversKey(partitionKey, config.coverageKeysOneIn)) keys.markCovered(slot);
    let replayed = 0;
    for (const attempt of log.attemptsOf(partitionKey)) {
      observe(slot, attempt, false);
      replayed++;
    }
    if (replayed > 0) rebuiltKeys++;
    if (keys.size > config.maxKeys) evictOldest();
    return slot;
  }

  function evictOldest(): void {
    // The coverage join knows keys by slot: it takes this batch's attempts before slots change hands.
    countCoverage();
    const target = Math.floor(config.maxKeys * 0.9);
    const victims: string[] = [];
    for (const partitionKey of keys.keys()) {
      if (keys.size - victims.length <= target) break;
      victims.push(partitionKey);
    }
    for (const partitionKey of victims) forget(partitionKey);
    evictedKeys += victims.length;
  }

  /**
   * Updates the key's compact state; true when the key needs judging from its full evidence.
   * `fresh` is false when replaying a rebuilt key's history, which the scope report already counted.
   */
  function observe(slot: number, attempt: Attempt, fresh: boolean): boolean {
    const tenant = attempt.tenant === '' ? -1 : interner.id(attempt.tenant);
    if (mayHideExecution(attempt)) keys.markSuspect(slot);
    // A side effect lands at no tier, like a client send; a suspect key is judged again with it.
    if (attempt.kind === 'client' || attempt.kind === 'effect')
      return keys.observe(slot, attempt.endUnixMillis, tenant, -1, -1, false, noop);
    const { service, node } = attempt.placement;
    const name = tierName(service, attempt.operation);
    // Past `maxTiers` the tier's aggregates are the overflow bucket's; the key is judged at its own tier all the same.
    const stats = fresh ? scopes.tierOf(name, service, attempt.operation, true) : undefined;
    if (stats !== undefined && attempt.kind === 'server') scopes.decided(stats, attempt);
    return keys.observe(
      slot,
      attempt.endUnixMillis,
      tenant,
      interner.id(name),
      interner.id(node),
      attempt.kind === 'server',
      stats === undefined ? noop : () => scopes.keySeen(stats),
    );
  }

  /**
   * Hands the attempts this batch kept to the coverage join, in one pass after the batch's loop:
   * the join's state stays in cache for the pass instead of being evicted by the rest of the work
   * on each attempt.
   */
  function countCoverage(): void {
    for (let i = 0; i < kept.length; i++) coverage.add(kept[i]!, keptSlots[i]!, keptSeen[i]!);
    kept.length = 0;
    keptSlots.length = 0;
    keptSeen.length = 0;
  }

  /** Drops the key's compact state (its attempts stay in the log, to rebuild it from). */
  function forget(partitionKey: string): void {
    const slot = keys.peek(partitionKey);
    if (slot !== undefined) coverage.detach(slot);
    keys.delete(partitionKey);
    judgedAttempts.delete(partitionKey);
  }

  /** Whether a key changed by a batch is judged now, or left to the next tick (see `ingest`). */
  function judgesNow(partitionKey: string): boolean {
    const attempts = keys.attemptCount(partitionKey);
    if (attempts <= LARGE_KEY_ATTEMPTS || attempts >= config.maxAttemptsPerKey) return true;
    return attempts >= 2 * (judgedAttempts.get(partitionKey) ?? 0);
  }

  function judge(partitionKey: string, changes: Changes): void {
    deferred.delete(partitionKey);
    const evidence = log.attemptsOf(partitionKey);
    if (evidence.length > LARGE_KEY_ATTEMPTS) judgedAttempts.set(partitionKey, evidence.length);
    else judgedAttempts.delete(partitionKey);
    if (evidence.length === 0) return;
    updateSpreads(partitionKey, evidence);
    const drafts = evaluateKey(
      evidence[0]!.key,
      evidence,
      (service) => routing.eventsOf(service),
      config,
    ).map((draft) => withReplayDoubt(draft, scopes.showsReplays(tierName(draft.service, draft.operation))));
    apply(partitionKey, drafts, changes);
    awaitRouting(partitionKey, evidence);
  }

  /** Findings doubted for want of a replay at a tier that has now shown one (replay-header.ts). */
  function judgeDoubtedAgain(changes: Changes): void {
    const tiers = scopes.takeFirstReplays();
    if (tiers.length === 0) return;
    const replayed = new Set(tiers);
    const keysToJudge = new Set<string>();
    for (const finding of current.values()) {
      if (
        finding.severityReason === 'replay_unseen' &&
        replayed.has(tierName(finding.service, finding.operation))
      )
        keysToJudge.add(partitionKeyOf(finding.attempts[0]!));
    }
    for (const partitionKey of [...keysToJudge].sort()) judge(partitionKey, changes);
  }

  function awaitRouting(partitionKey: string, evidence: readonly Attempt[]): void {
    if (!evidence.some(mayHideExecution)) {
      awaitingRouting.delete(partitionKey);
      return;
    }
    const services = new Set<string>();
    let firstUnixMillis = Number.POSITIVE_INFINITY;
    let lastUnixMillis = Number.NEGATIVE_INFINITY;
    for (const attempt of evidence) {
      if (attempt.kind === 'server' || attempt.kind === 'arrival') services.add(attempt.placement.service);
      if (attempt.startUnixMillis < firstUnixMillis) firstUnixMillis = attempt.startUnixMillis;
      if (attempt.endUnixMillis > lastUnixMillis) lastUnixMillis = attempt.endUnixMillis;
    }
    // Deleted first so that the map's order stays least recently judged first.
    awaitingRouting.delete(partitionKey);
    awaitingRouting.set(partitionKey, { services, firstUnixMillis, lastUnixMillis });
    if (awaitingRouting.size > config.maxKeys) {
      for (const oldest of awaitingRouting.keys()) {
        awaitingRouting.delete(oldest);
        routingFollowUpDropped++;
        if (awaitingRouting.size <= config.maxKeys) break;
      }
    }
  }

  function updateSpreads(partitionKey: string, evidence: Attempt[]): void {
    const byTier = new Map<string, Attempt[]>();
    for (const attempt of evidence) {
      if (attempt.kind === 'client' || attempt.kind === 'effect') continue;
      const name = tierName(attempt.placement.service, attempt.operation);
      const list = byTier.get(name);
      if (list === undefined) byTier.set(name, [attempt]);
      else list.push(attempt);
    }
    let known = spreads.get(partitionKey);
    if (known === undefined) spreads.set(partitionKey, (known = { lastSeenUnixMillis: 0, tiers: new Map() }));
    for (const attempt of evidence) {
      if (attempt.endUnixMillis > known.lastSeenUnixMillis) known.lastSeenUnixMillis = attempt.endUnixMillis;
    }
    for (const [name, landed] of byTier) {
      const spread = spreadOf(landed);
      scopes.spreadChanged(name, known.tiers.get(name) ?? 'node', spread);
      known.tiers.set(name, spread);
    }
  }

  function report(partitionKey: string, finding: Finding): void {
    if (!current.has(finding.id))
      reportedPerKey.set(partitionKey, (reportedPerKey.get(partitionKey) ?? 0) + 1);
    current.set(finding.id, finding);
  }

  function unreport(partitionKey: string, finding: Finding): void {
    current.delete(finding.id);
    unsettled.delete(finding.id);
    const left = reportedPerKey.get(partitionKey)! - 1;
    if (left === 0) reportedPerKey.delete(partitionKey);
    else reportedPerKey.set(partitionKey, left);
  }

  function apply(partitionKey: string, drafts: FindingDraft[], changes: Changes): void {
    const next = new Set<string>();
    for (const draft of drafts) {
      next.add(draft.id);
      const before = current.get(draft.id);
      countFindingOverflow(before, draft);
      const placed = book.place(draft, changes.incidents, changes.retractedIncidents);
      report(partitionKey, placed);
      awaitSettling(placed, changes);
      if (
        before === undefined ||
        signatureOf(before) !== signatureOf(draft) ||
        before.incidentId !== placed.incidentId
      ) {
        changes.findings.set(placed.id, placed);
        changes.retractedFindings.delete(placed.id);
      }
    }
    if ((reportedPerKey.get(partitionKey) ?? 0) === next.size) return;
    // Ids are derived from class and partition key, so what this key reported before is found
    // without remembering it per key.
    for (const findingClass of FINDING_CLASSES) {
      const id = findingId(findingClass, partitionKey);
      const before = current.get(id);
      if (next.has(id) || before === undefined) continue;
      book.remove(id, changes.incidents, changes.retractedIncidents);
      unreport(partitionKey, before);
      changes.findings.delete(id);
      changes.retractedFindings.add(id);
    }
  }

  /** Adds what `draft`'s lists leave out beyond what the key's finding left out before. */
  function countFindingOverflow(before: Finding | undefined, draft: FindingDraft): void {
    const stores = draft.storesTotal - draft.stores.length;
    const nodes = draft.nodesTotal - draft.nodes.length;
    const storesBefore = before === undefined ? 0 : storesTotalOf(before) - before.stores.length;
    const nodesBefore = before === undefined ? 0 : nodesTotalOf(before) - before.nodes.length;
    if (stores > storesBefore) book.overflow.findingStores += stores - storesBefore;
    if (nodes > nodesBefore) book.overflow.findingNodes += nodes - nodesBefore;
  }

  /** Leaves the finding's incident to be settled by `settle` once its attribution is final. */
  function awaitSettling(finding: Finding, changes: Changes): void {
    // Routing is inferred from activity only: without any for the service there is nothing to
    // wait for (a pipeline always has some: every SERVER span counts).
    if (routing.knows(finding.service))
      unsettled.set(finding.id, repeatUnixMillisOf(finding) + routing.detectionHorizonMillis());
    else book.settle(finding.id, changes.incidents);
  }

  /**
   * Re-judges findings whose service's routing events changed since the last look, and the keys
   * awaiting routing whose attempts a changed event's window meets; reports the events that
   * appeared, moved or disappeared.
   */
  function regroup(changes: Changes): void {
    const signature = new Map<string, string>();
    const events = new Map<string, ReportedEvent>();
    /** Per service, the windows (before and after) of the events that appeared, moved or disappeared. */
    const changedWindows = new Map<string, [number, number][]>();
    const windowChanged = (event: ReportedEvent) => {
      const windows = changedWindows.get(event.service);
      const window: [number, number] = [event.startUnixMillis, event.endUnixMillis];
      if (windows === undefined) changedWindows.set(event.service, [window]);
      else windows.push(window);
    };
    for (const event of routing.all()) {
      const entry = `${event.id}:${event.startUnixMillis}:${event.endUnixMillis}:${event.ended}`;
      const reported = {
        entry,
        service: event.service,
        startUnixMillis: event.startUnixMillis,
        endUnixMillis: event.endUnixMillis,
      };
      events.set(event.id, reported);
      signature.set(event.service, (signature.get(event.service) ?? '') + entry + ';');
      const before = reportedEvents.get(event.id);
      if (before?.entry === entry) continue;
      changes.routingEvents.push(event);
      windowChanged(reported);
      if (before !== undefined) windowChanged(before);
    }
    const expired = new Set(routing.takeExpired());
    for (const [id, before] of reportedEvents) {
      if (events.has(id) || expired.has(id)) continue;
      changes.retractedRoutingEvents.push(id);
      windowChanged(before);
    }
    reportedEvents = events;
    const changedServices = new Set<string>();
    for (const service of new Set([...signature.keys(), ...routingSignature.keys()])) {
      if (signature.get(service) !== routingSignature.get(service)) changedServices.add(service);
    }
    routingSignature = signature;
    if (changedServices.size === 0) return;
    const keysToJudge = new Set<string>();
    for (const finding of current.values()) {
      if (changedServices.has(finding.service)) keysToJudge.add(partitionKeyOf(finding.attempts[0]!));
    }
    // What unseen-execution.ts reads of an event lies within the routing slack of a mark's time.
    const slack = config.routingSlackMillis;
    for (const [partitionKey, { services, firstUnixMillis, lastUnixMillis }] of awaitingRouting) {
      for (const service of services) {
        const windows = changedWindows.get(service);
        if (
          windows?.some(([start, end]) => start - slack <= lastUnixMillis && end + slack >= firstUnixMillis)
        )
          keysToJudge.add(partitionKey);
      }
    }
    for (const partitionKey of [...keysToJudge].sort()) judge(partitionKey, changes);
  }

  function expire(nowUnixMillis: number): void {
    const cutoff = nowUnixMillis - config.retryHorizonMillis;
    forgetBefore(cutoff);
    routing.prune();
    book.forget(cutoff);
  }

  /** Keys, attempts and findings last seen before `cutoff`. */
  function forgetBefore(cutoff: number): void {
    // Least recently touched first: in a live pipeline that is oldest event time first, so the
    // sweep stops at the first key still within the horizon instead of visiting millions.
    const expired: string[] = [];
    for (const partitionKey of keys.keys()) {
      if (keys.lastSeen(partitionKey) >= cutoff) break;
      expired.push(partitionKey);
    }
    for (const partitionKey of expired) forget(partitionKey);
    for (const [partitionKey, seen] of spreads)
      if (seen.lastSeenUnixMillis < cutoff) spreads.delete(partitionKey);
    for (const [partitionKey, { lastUnixMillis }] of awaitingRouting)
      if (lastUnixMillis < cutoff) awaitingRouting.delete(partitionKey);
    log.expire(cutoff);
    for (const finding of current.values())
      if (finding.lastSeenUnixMillis < cutoff) unreport(partitionKeyOf(finding.attempts[0]!), finding);
  }

  /**
   * Settles the incidents of findings whose routing attribution is final: activity is closed far
   * enough past their repeat that no event which could have broken their retry path is still to
   * be inferred. Runs after `regroup`, so a finding is settled in the incident it ends up in.
   */
  function settle(changes: Changes): void {
    const closed = routing.closedUnixMillisNow();
    for (const [id, finalAt] of unsettled) {
      if (finalAt > closed) continue;
      unsettled.delete(id);
      book.settle(id, changes.incidents);
    }
  }

  function tick(nowUnixMillis: number): DetectorChanges {
    const changes = new Changes();
    routing.advanceClock(nowUnixMillis);
    if (deferred.size > 0) for (const partitionKey of [...deferred].sort()) judge(partitionKey, changes);
    regroup(changes);
    settle(changes);
    book.resolveQuiet(nowUnixMillis, changes.incidents);
    expire(nowUnixMillis);
    book.summarizeChanged();
    return changes.result();
  }

  /**
   * Names of tiers, nodes and tenants would otherwise accumulate for the life of the process (pods
   * come and go with every deploy; tenants can number millions). Once the interner holds twice the
   * names the keys in memory used at the last compaction, it is rebuilt with only those in use.
   */
  function compactInterner(): void {
    if (interner.size <= internerLimit) return;
    const fresh = new Interner();
    const remapped = new Int32Array(interner.size).fill(-1);
    keys.remapInterned((id) => {
      let next = remapped[id]!;
      if (next === -1) remapped[id] = next = fresh.id(interner.name(id));
      return next;
    });
    interner = fresh;
    internerLimit = Math.max(MIN_INTERNER_LIMIT, 2 * fresh.size);
  }

  return {
    ingest(input) {
      const changes = new Changes();
      const dirty = new Set<string>();
      const batches: readonly ExtractedAttempts[] = Array.isArray(input)
        ? input
        : [input as ExtractedAttempts];
      const counted: ExtractedAttempts[] = [];
      for (const batch of batches) {
        const duplicatesBefore = duplicateAttempts;
        for (const attempt of batch.attempts) {
          attemptsSeen++;
          if (attempt.endUnixMillis > watermark) watermark = attempt.endUnixMillis;
          const partitionKey = partitionKeyOf(attempt);
          const slot = slotOf(partitionKey);
          if (keys.isCapped(slot)) {
            cappedAttempts++;
            continue;
          }
          if (!log.append(partitionKey, attempt)) {
            duplicateAttempts++;
            continue;
          }
          if (observe(slot, attempt, true)) dirty.add(partitionKey);
          if (keys.isCovered(slot)) {
            kept.push(attempt);
            keptSlots.push(slot);
            keptSeen.push(keys.attemptsAt(slot) > 1);
          }
        }
        // Activity is counts, not spans, so the attempt log cannot refuse it span by span; a batch
        // whose every attempt the log already held is a payload delivered again (an exporter's or a
        // Collector's retry), and counting its activity twice would move the routing inference.
        // Judged batch by batch: a retry committed with new payloads is still a retry.
        const redelivered =
          batch.attempts.length > 0 && duplicateAttempts - duplicatesBefore === batch.attempts.length;
        if (!redelivered) counted.push(batch);
      }
      countCoverage();
      coverage.advance(watermark);
      const { activity } = mergeExtracted(counted);
      routing.record(activity);
      for (const partitionKey of dirty) {
        if (judgesNow(partitionKey)) judge(partitionKey, changes);
        else deferred.add(partitionKey);
      }
      judgeDoubtedAgain(changes);
      book.summarizeChanged();
      compactInterner();
      const result = changes.result();
      result.activity = activity;
      return result;
    },
    tick,
    flush: () => {
      routing.closeAll();
      coverage.finalizeAll();
      return tick(watermark);
    },
    expire(nowUnixMillis) {
      const changes = new Changes();
      const cutoff = nowUnixMillis - config.retryHorizonMillis;
      for (const partitionKey of [...deferred].sort())
        if (keys.lastSeen(partitionKey) < cutoff) judge(partitionKey, changes);
      forgetBefore(cutoff);
      book.summarizeChanged();
      return changes.result();
    },
    findings: () => [...current.values()],
    incidents: () => book.all().map((incident) => ({ ...incident })),
    routingEvents: () => routing.all(),
    scopeReport: () => scopes.rows(),
    scopeReportPage: (after, limit) => scopes.page(after, limit),
    scopeOverflow: () => scopes.overflow(),
    stats: () => ({
      keysInMemory: keys.size,
      suspectKeys: spreads.size,
      attempts: attemptsSeen,
      duplicateAttempts,
      evictedKeys,
      rebuiltKeys,
      cappedAttempts,
      hotKeys: keys.cappedKeys,
      findingStoresLeftOut: book.overflow.findingStores,
      findingNodesLeftOut: book.overflow.findingNodes,
      incidentStoresLeftOut: book.overflow.incidentStores,
      incidentNodesLeftOut: book.overflow.incidentNodes,
      internedNames: interner.size,
      coverageEntries: coverage.pendingEntries,
      coverageEvictedEntries: coverage.evictedEntries,
      tiers: scopes.size,
      tierOverflowAttempts: scopes.overflowAttempts,
      routingFollowUpKeys: awaitingRouting.size,
      routingFollowUpDropped,
      watermarkUnixMillis: watermark,
    }),
    scopeState: () => scopes.exportState(),
    scopeChanges: () => scopes.takeChanges(),
    restore({ findings, activity, scopeState }) {
      if (activity !== undefined) routing.record(activity);
      if (scopeState !== undefined) {
        scopes.importState(scopeState);
        coverage.forgetTiers();
      }
      const changes = new Changes();
      for (const finding of findings) {
        const placed = book.place(finding, changes.incidents, changes.retractedIncidents);
        report(partitionKeyOf(finding.attempts[0]!), placed);
        // Settled again by the next tick, once the restored activity's closed edge is past it.
        awaitSettling(placed, changes);
        if (finding.lastSeenUnixMillis > watermark) watermark = finding.lastSeenUnixMillis;
      }
    },
  };
}

/** A routing event as `tick` last reported it: its signature, and where its window lay. */
interface ReportedEvent {
  readonly entry: string;
  readonly service: string;
  readonly startUnixMillis: number;
  readonly endUnixMillis: number;
}

/** A key judged again when routing events of its services change near its attempts (see awaitingRouting). */
interface AwaitingKey {
  readonly services: Set<string>;
  readonly firstUnixMillis: number;
  readonly lastUnixMillis: number;
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
