import { type ExtractedAttempts, mergeExtracted, type NodeActivity, partitionKey } from '@keyscope/attempts';
import { type DetectorConfig, defaultDetectorConfig } from './config.ts';
import { CoverageBatch } from './coverage/coverage-batch.ts';
import { EvidenceCoverage } from './coverage/evidence-coverage.ts';
import { KeySpreads } from './coverage/key-spreads.ts';
import { withReplayDoubt } from './coverage/replay-header.ts';
import {
  ScopeReport,
  type ScopeReportOverflow,
  type ScopeReportPage,
  type ScopeReportRow,
  type ScopeReportState,
} from './coverage/scope-report.ts';
import { Changes, type DetectorChanges } from './detector-changes.ts';
import { FindingsLedger } from './incidents/findings-ledger.ts';
import { type Incident, IncidentBook } from './incidents/incidents.ts';
import { type AttemptLog, createMemoryAttemptLog } from './memory/attempt-log.ts';
import { KeyMemory } from './memory/key-memory.ts';
import { ReportedRoutingEvents } from './routing/reported-routing-events.ts';
import type { RoutingEvent } from './routing/routing-event.ts';
import { RoutingFollowUp } from './routing/routing-follow-up.ts';
import { RoutingInference } from './routing/routing-inference.ts';
import { evaluateKey, type FindingDraft, type RoutingLookup } from './rules/evaluate-key.ts';
import type { Finding } from './rules/finding.ts';
import { JudgementSchedule } from './rules/judgement-schedule.ts';
import { tierName } from './tier-name.ts';

export type { DetectorChanges } from './detector-changes.ts';

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
  /** Keys a changed routing event judges again that wait for `judgeRegrouped` (see TickOptions). */
  regroupedKeys: number;
  watermarkUnixMillis: number;
}

export interface TickOptions {
  /**
   * How many of the keys a changed routing event has to judge again the tick judges (all by
   * default): judging a key reads all its attempts, and an event under a large incident regroups
   * thousands. The rest wait, first in line, for `judgeRegrouped` or the next tick, and incidents
   * settle only once none waits. For a service that must not hold its event loop that long.
   */
  maxRegroupedKeys?: number;
}

export interface Detector {
  /**
   * Judges a batch of attempts; findings are emitted as soon as their evidence is complete. A
   * key with more than LARGE_KEY_ATTEMPTS attempts (rules/judgement-schedule.ts) is re-judged here
   * only when its attempts doubled since its last judgement (or reached `maxAttemptsPerKey`),
   * otherwise by the next `tick`: so what a batch costs does not grow with the history of the keys
   * in it.
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
  tick(nowUnixMillis: number, options?: TickOptions): DetectorChanges;
  /**
   * Judges up to `maxKeys` of the keys a tick regrouped and left waiting (`TickOptions`), and
   * settles incidents once none waits.
   */
  judgeRegrouped(maxKeys: number): DetectorChanges;
  /** Keys a tick regrouped that wait for `judgeRegrouped` (or the next tick). */
  regroupedKeys(): number;
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

/**
 * The detector: attempts in, findings, routing events, incidents and the scope report out
 * (docs/design.md, "The pipeline"). It orchestrates objects that each own one part of the state:
 *
 * - `KeyMemory` (memory/): each key's compact summary, rebuilt from the AttemptLog when needed;
 * - `JudgementSchedule` (rules/): which changed keys are judged now, which at the next tick;
 * - `FindingsLedger` (incidents/): the findings reported, placed in incidents, and their settling;
 * - `RoutingInference`, `ReportedRoutingEvents` and `RoutingFollowUp` (routing/): events inferred
 *   from node activity, what was reported of them, and the keys a changed event re-judges;
 * - `ScopeReport`, `KeySpreads`, `EvidenceCoverage` and `CoverageBatch` (coverage/): the scope report.
 */
export function createDetector(
  config: DetectorConfig = defaultDetectorConfig(),
  dependencies: DetectorDependencies = {},
): Detector {
  const log = dependencies.attemptLog ?? createMemoryAttemptLog();
  const routing = new RoutingInference(config);
  const routingLookup: RoutingLookup = (service) => routing.eventsOf(service);
  const reportedEvents = new ReportedRoutingEvents();
  const followUp = new RoutingFollowUp(config.maxKeys, config.routingSlackMillis);
  const book = new IncidentBook(config);
  const ledger = new FindingsLedger(book, routing, config);
  const scopes = new ScopeReport(
    config.declaredScopes ?? [],
    config.coverageKeysOneIn,
    config.maxTiers,
    config.replayHeaderMinRepeats,
  );
  const spreads = new KeySpreads(scopes);
  const coverage = new EvidenceCoverage(config.allowedLatenessMillis, config.maxCoverageEntries, scopes);
  const coverageBatch = new CoverageBatch(coverage);
  const schedule = new JudgementSchedule(config.maxAttemptsPerKey);
  const memory = new KeyMemory(config, log, scopes, (partitionKey, slot) => {
    coverageBatch.detach(slot);
    schedule.forget(partitionKey);
  });
  /** Keys a changed routing event is to judge again, not yet judged (see `TickOptions`). */
  const regrouped = new Set<string>();
  let watermark = Number.NEGATIVE_INFINITY;
  let attemptsSeen = 0;
  let duplicateAttempts = 0;

  /** Judges the key on every attempt the log holds of it, and reports what its findings became. */
  function judge(partitionKey: string, changes: Changes): void {
    regrouped.delete(partitionKey);
    const evidence = log.attemptsOf(partitionKey);
    schedule.judged(partitionKey, evidence.length);
    if (evidence.length === 0) return;
    const drafts = evaluateKey(evidence[0]!.key, evidence, routingLookup, config).map((draft) =>
      withReplayDoubt(draft, scopes.showsReplays(tierName(draft.service, draft.operation))),
    );
    spreads.update(partitionKey, evidence, unseenNodesOf(drafts));
    ledger.apply(partitionKey, drafts, changes);
    followUp.follow(partitionKey, evidence);
  }

  function judgeAll(keys: Set<string>, changes: Changes): void {
    for (const partitionKey of [...keys].sort()) judge(partitionKey, changes);
  }

  /** Findings doubted for want of a replay at a tier that has now shown one (replay-header.ts). */
  function judgeDoubtedAgain(changes: Changes): void {
    const tiers = scopes.takeFirstReplays();
    if (tiers.length === 0) return;
    const keysToJudge = new Set<string>();
    ledger.keysDoubtedAt(new Set(tiers), keysToJudge);
    judgeAll(keysToJudge, changes);
  }

  /**
   * Reports the routing events that appeared, moved or disappeared, and re-judges the findings of
   * their services and the followed keys whose attempts a changed event's window meets.
   */
  function regroup(changes: Changes): void {
    const changed = reportedEvents.report(
      routing.all(),
      routing.takeExpired(),
      changes.routingEvents,
      changes.retractedRoutingEvents,
    );
    if (changed === null) return;
    const keysToJudge = new Set<string>();
    ledger.keysOfServices(changed.services, keysToJudge);
    followUp.keysNear(changed.windows, keysToJudge);
    for (const partitionKey of [...keysToJudge].sort()) regrouped.add(partitionKey);
  }

  /**
   * Judges up to `maxKeys` of the keys regrouping queued, in the order queued. Incidents settle
   * only once none waits: a finding about to move to another incident must not page with the one
   * it is leaving.
   */
  function judgeRegrouped(maxKeys: number, changes: Changes): void {
    let judged = 0;
    for (const partitionKey of regrouped) {
      if (judged++ >= maxKeys) break;
      judge(partitionKey, changes);
    }
    if (regrouped.size === 0) ledger.settle(changes);
  }

  /** Keys, attempts and findings last seen before `cutoff`. */
  function forgetBefore(cutoff: number): void {
    memory.forgetBefore(cutoff);
    spreads.forgetBefore(cutoff);
    followUp.forgetBefore(cutoff);
    log.expire(cutoff);
    ledger.forgetBefore(cutoff);
  }

  function tick(nowUnixMillis: number, options: TickOptions = {}): DetectorChanges {
    const changes = new Changes();
    routing.advanceClock(nowUnixMillis);
    if (schedule.deferredCount > 0)
      for (const partitionKey of schedule.deferredKeys()) judge(partitionKey, changes);
    regroup(changes);
    judgeRegrouped(options.maxRegroupedKeys ?? Number.POSITIVE_INFINITY, changes);
    book.resolveQuiet(nowUnixMillis, changes.incidents);
    const cutoff = nowUnixMillis - config.retryHorizonMillis;
    forgetBefore(cutoff);
    routing.prune();
    book.forget(cutoff);
    book.summarizeChanged();
    return changes.result();
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
          const key = partitionKey(attempt, config);
          const slot = memory.slotOf(key);
          if (!memory.admit(slot)) continue;
          if (!log.append(key, attempt)) {
            duplicateAttempts++;
            continue;
          }
          if (memory.observe(slot, attempt)) dirty.add(key);
          if (memory.isCovered(slot)) coverageBatch.hold(attempt, slot, memory.attemptsAt(slot) > 1);
        }
        // Activity is counts, not spans, so the attempt log cannot refuse it span by span; a batch
        // whose every attempt the log already held is a payload delivered again (an exporter's or a
        // Collector's retry), and counting its activity twice would move the routing inference.
        // Judged batch by batch: a retry committed with new payloads is still a retry.
        const redelivered =
          batch.attempts.length > 0 && duplicateAttempts - duplicatesBefore === batch.attempts.length;
        if (!redelivered) counted.push(batch);
      }
      coverageBatch.handOff();
      coverage.advance(watermark);
      const { activity } = mergeExtracted(counted);
      routing.record(activity);
      for (const key of dirty) {
        if (schedule.judgesNow(key, memory.attemptCount(key))) judge(key, changes);
        else schedule.defer(key);
      }
      judgeDoubtedAgain(changes);
      book.summarizeChanged();
      memory.compactInterner();
      const result = changes.result();
      result.activity = activity;
      return result;
    },
    tick,
    judgeRegrouped(maxKeys) {
      const changes = new Changes();
      judgeRegrouped(maxKeys, changes);
      book.summarizeChanged();
      return changes.result();
    },
    regroupedKeys: () => regrouped.size,
    flush: () => {
      routing.closeAll();
      coverage.finalizeAll();
      return tick(watermark);
    },
    expire(nowUnixMillis) {
      const changes = new Changes();
      const cutoff = nowUnixMillis - config.retryHorizonMillis;
      for (const partitionKey of [...regrouped]) judge(partitionKey, changes);
      for (const partitionKey of schedule.deferredKeys())
        if (memory.lastSeen(partitionKey) < cutoff) judge(partitionKey, changes);
      forgetBefore(cutoff);
      book.summarizeChanged();
      return changes.result();
    },
    findings: () => ledger.all(),
    incidents: () => book.all().map((incident) => ({ ...incident })),
    routingEvents: () => routing.all(),
    scopeReport: () => scopes.rows(),
    scopeReportPage: (after, limit) => scopes.page(after, limit),
    scopeOverflow: () => scopes.overflow(),
    stats: () => ({
      keysInMemory: memory.size,
      suspectKeys: spreads.size,
      attempts: attemptsSeen,
      duplicateAttempts,
      evictedKeys: memory.evictedKeys,
      rebuiltKeys: memory.rebuiltKeys,
      cappedAttempts: memory.cappedAttempts,
      hotKeys: memory.hotKeys,
      findingStoresLeftOut: book.overflow.findingStores,
      findingNodesLeftOut: book.overflow.findingNodes,
      incidentStoresLeftOut: book.overflow.incidentStores,
      incidentNodesLeftOut: book.overflow.incidentNodes,
      internedNames: memory.internedNames,
      coverageEntries: coverage.pendingEntries,
      coverageEvictedEntries: coverage.evictedEntries,
      tiers: scopes.size,
      tierOverflowAttempts: scopes.overflowAttempts,
      routingFollowUpKeys: followUp.size,
      routingFollowUpDropped: followUp.dropped,
      regroupedKeys: regrouped.size,
      watermarkUnixMillis: watermark,
    }),
    scopeState: () => scopes.exportState(),
    scopeChanges: () => scopes.takeChanges(),
    restore({ findings, activity, scopeState }) {
      if (activity !== undefined) routing.record(activity);
      if (scopeState !== undefined) {
        scopes.importState(scopeState);
      }
      const changes = new Changes();
      for (const finding of findings) {
        ledger.restore(finding, changes);
        if (finding.lastSeenUnixMillis > watermark) watermark = finding.lastSeenUnixMillis;
      }
    },
  };
}

/** The nodes suspects' evidence says an unseen execution ran on, by the tier of each suspect. */
function unseenNodesOf(drafts: readonly FindingDraft[]): Map<string, string[]> | undefined {
  let nodes: Map<string, string[]> | undefined;
  for (const draft of drafts) {
    if (draft.suspicion === null) continue;
    const named = draft.suspicion.evidence.map((e) => e.node).filter((node) => node !== '');
    if (named.length > 0) (nodes ??= new Map()).set(tierName(draft.service, draft.operation), named);
  }
  return nodes;
}
