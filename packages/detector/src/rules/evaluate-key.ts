import {
  type Attempt,
  type ClientAttempt,
  derivedStoreId,
  endedBefore,
  type HttpMethod,
  partitionKey,
  type ServerAttempt,
  withoutRepeatedLogDecisions,
} from '@keyscope/attempts';
import type { DetectorConfig } from '../config.ts';
import { findingId } from '../ids.ts';
import { eventCovers, type RoutingEvent } from '../routing/routing-event.ts';
import { tierName } from '../tier-name.ts';
import { endpointOf, requestOf, requestSpanUnseen, requestWindowOf } from './endpoint.ts';
import {
  type ExecutionOutcomes,
  type ExecutionSpan,
  executionOutcomes,
  executionSpans,
} from './execution-outcome.ts';
import {
  type Finding,
  type FindingCause,
  type FindingClass,
  type RetriedBy,
  type RetryAfter,
  SEVERITY,
  type Suspicion,
} from './finding.ts';
import { type SpanIndex, spanIndexOf } from './span-index.ts';
import { hasUnseenExecutionMarks, readSend, suspectUnseenExecution } from './unseen-execution.ts';

/** A finding before it is placed in an incident. */
export type FindingDraft = Omit<Finding, 'incidentId'>;

export type RoutingLookup = (service: string) => readonly RoutingEvent[];

const NO_ROUTING: RoutingLookup = () => [];

interface Tier {
  service: string;
  operation: string;
  server: ServerAttempt[];
  /** Server attempts and arrivals: everywhere a request of this key landed at this tier. */
  landed: Attempt[];
}

/** A tier that executed one key more than once, before choosing which tier to report. */
interface Duplicate {
  tier: Tier;
  executions: ServerAttempt[];
  absorbed: boolean;
  /** false: some of `executions` failed after admission with an effect nobody can tell. */
  confirmed: boolean;
}

/**
 * Every finding one key's attempts support, by the rules of docs/design.md's classes ("What keyscope judges"). Pure: the
 * same set of attempts yields the same findings whatever order they arrived in.
 */
export function evaluateKey(
  key: string,
  attempts: readonly Attempt[],
  routing: RoutingLookup,
  config: DetectorConfig,
): FindingDraft[] {
  // A decision recorded both as a span and as a log record is one execution.
  const evidence = [...withoutRepeatedLogDecisions(attempts)].sort(compareAttempts);
  const tiers = groupTiers(evidence);
  const drafts: FindingDraft[] = [];

  const duplicates: Duplicate[] = [];
  const outcomes = executionOutcomes(evidence);
  for (const tier of tiers.values()) {
    for (const admitted of executionsByTenant(tier.server)) {
      if (admitted.length < 2) continue;
      // An admitted attempt that failed before its effect did not execute (execution-outcome.ts);
      // two that did are a duplicate whatever else is unknown.
      const possible = admitted.filter((a) => outcomes(a) !== 'not_executed');
      const executed = possible.filter((a) => outcomes(a) === 'executed');
      const confirmed = executed.length >= 2;
      const executions = confirmed ? executed : possible;
      if (executions.length < 2) continue;
      duplicates.push({ tier, executions, absorbed: isAbsorbed(tier, executions, tiers), confirmed });
    }
  }

  const reported = chooseReportedDuplicate(duplicates, tiers);
  if (reported !== null) {
    const { tier, executions, absorbed, confirmed } = reported;
    const stores = distinct(executions.map((e) => e.store));
    let findingClass: FindingClass;
    let cause: FindingCause = null;
    if (absorbed) findingClass = 'absorbed_duplicate';
    else if (!confirmed) {
      findingClass = 'suspected_duplicate';
      cause = 'effect_unknown';
    } else if (stores.length >= 2) findingClass = 'cross_store_duplicate';
    else {
      findingClass = 'same_store_duplicate';
      cause = storeUnknownAcrossNodes(executions) ? 'store_unknown' : causeOfRepeat(executions, evidence);
    }
    const found = draft({
      key,
      findingClass,
      cause,
      tier,
      executions,
      repeat: executions[1]!,
      evidence,
      routing,
      config,
    });
    if (cause === 'effect_unknown')
      found.suspicion = failedAfterAdmission(executions, outcomes, found.routing.event);
    drafts.push(found);
  } else {
    // One execution in the spans, and marks of another whose spans were lost: it outranks a scope
    // violation, as a duplicate does, and gives way to the duplicate when that one shows.
    const found =
      unseenExecution(key, tiers, evidence, outcomes, routing, config) ??
      scopeViolation(key, tiers, evidence, outcomes, routing, config);
    if (found !== null) drafts.push(found);
  }

  const collision = keyCollision(evidence);
  if (collision !== null) {
    const tier = tiers.get(tierName(collision.service, collision.operation))!;
    const executions = tier.server.filter((a) => a.outcome === 'miss');
    // Two tenants chose one key: no routing change made that happen, so none is attributed.
    drafts.push(
      draft({
        key,
        findingClass: 'key_collision',
        cause: collision.cause,
        tier,
        executions,
        repeat: collision.second,
        evidence,
        routing: NO_ROUTING,
        config,
      }),
    );
  }
  return drafts;
}

/** Predictive: the retry scope already exceeds the key scope, but nothing ran twice yet. */
function scopeViolation(
  key: string,
  tiers: Map<string, Tier>,
  evidence: Attempt[],
  outcomes: ExecutionOutcomes,
  routing: RoutingLookup,
  config: DetectorConfig,
): FindingDraft | null {
  for (const tier of tiers.values()) {
    for (const requests of byTenant(tier.server)) {
      if (distinct(requests.map((a) => a.store)).length < 2) continue;
      const executions = requests.filter((a) => a.outcome === 'miss' && outcomes(a) !== 'not_executed');
      // The retry that crossed the key scope: the first attempt in a store other than the first's.
      const crossing = requests.find((a) => a.store !== requests[0]!.store)!;
      return draft({
        key,
        findingClass: 'scope_violation',
        cause: null,
        tier,
        executions,
        repeat: crossing,
        evidence,
        routing,
        config,
      });
    }
  }
  return null;
}

/**
 * The first tier and tenant whose requests executed once in the spans and whose evidence says
 * another execution ran unseen (unseen-execution.ts): a suspected duplicate, cause
 * `execution_unseen`, blamed on the routing event its strongest evidence rests on.
 */
function unseenExecution(
  key: string,
  tiers: Map<string, Tier>,
  evidence: Attempt[],
  outcomes: ExecutionOutcomes,
  routing: RoutingLookup,
  config: DetectorConfig,
): FindingDraft | null {
  if (!hasUnseenExecutionMarks(evidence)) return null;
  for (const tier of tiers.values()) {
    for (const requests of byTenant(tier.server)) {
      const executions = requests.filter((a) => a.outcome === 'miss' && outcomes(a) !== 'not_executed');
      if (executions.length !== 1) continue;
      const visible = executions[0]!;
      const unseen = suspectUnseenExecution(tier, visible.tenant, evidence, routing(tier.service), config);
      if (unseen === null) continue;
      const found = draft({
        key,
        findingClass: 'suspected_duplicate',
        cause: 'execution_unseen',
        tier,
        executions,
        repeat: visible,
        evidence,
        routing,
        config,
      });
      found.suspicion = unseen.suspicion;
      if (unseen.event !== null) found.routing = { ...found.routing, event: unseen.event };
      return found;
    }
  }
  return null;
}

/** The evidence of an `effect_unknown` suspect: each admitted attempt whose effect nobody can tell. */
function failedAfterAdmission(
  executions: readonly ServerAttempt[],
  outcomes: ExecutionOutcomes,
  event: RoutingEvent | null,
): Suspicion {
  const unknown = executions.filter((a) => outcomes(a) === 'unknown');
  return {
    strength: 'moderate',
    evidence: unknown.map((a) => ({
      kind: 'failed_after_admission',
      strength: 'moderate',
      traceId: a.traceId,
      spanId: a.spanId,
      atUnixMillis: a.startUnixMillis,
      node: a.placement.node,
      store: a.store,
      routingEventId: event !== null && eventCovers(event, a.placement) ? event.id : null,
    })),
  };
}

function groupTiers(evidence: readonly Attempt[]): Map<string, Tier> {
  const tiers = new Map<string, Tier>();
  for (const attempt of evidence) {
    if (attempt.kind === 'client' || attempt.kind === 'effect') continue;
    // A decision on a child span counts at its request's endpoint, with the request itself.
    const operation = endpointOf(attempt, evidence);
    const name = tierName(attempt.placement.service, operation);
    let tier = tiers.get(name);
    if (tier === undefined) {
      tier = { service: attempt.placement.service, operation, server: [], landed: [] };
      tiers.set(name, tier);
    }
    tier.landed.push(attempt);
    if (attempt.kind === 'server') tier.server.push(attempt);
  }
  // An arrival-only tier (a server span that carries the key but consulted no store) is where a
  // request passed through, not a dedup tier.
  for (const [name, tier] of tiers) if (tier.server.length === 0) tiers.delete(name);
  return tiers;
}

/**
 * Executions grouped by tenant: two tenants that happen to send one key are two requests (that is
 * a key collision, reported as such), not one request executed twice.
 */
function executionsByTenant(server: readonly ServerAttempt[]): ServerAttempt[][] {
  return byTenant(server.filter((attempt) => attempt.outcome === 'miss'));
}

function byTenant(server: readonly ServerAttempt[]): ServerAttempt[][] {
  const groups = new Map<string, ServerAttempt[]>();
  for (const attempt of server) {
    const list = groups.get(attempt.tenant);
    if (list === undefined) groups.set(attempt.tenant, [attempt]);
    else list.push(attempt);
  }
  return [...groups.values()];
}

/** Tiers that received this key's requests from `upstream` within the same traces. */
function downstreamOf(upstream: Tier, tiers: Map<string, Tier>): Tier[] {
  const traces = new Map<string, number>();
  for (const attempt of upstream.server) {
    const start = traces.get(attempt.traceId);
    if (start === undefined || attempt.startUnixMillis < start)
      traces.set(attempt.traceId, attempt.startUnixMillis);
  }
  const out: Tier[] = [];
  for (const tier of tiers.values()) {
    if (tier === upstream) continue;
    const below = tier.server.some((attempt) => {
      const start = traces.get(attempt.traceId);
      return start !== undefined && attempt.startUnixMillis >= start;
    });
    if (below) out.push(tier);
  }
  return out;
}

/** Every repeat execution was answered `hit` by a downstream tier in the repeat's own trace. */
function isAbsorbed(tier: Tier, executions: ServerAttempt[], tiers: Map<string, Tier>): boolean {
  const downstream = downstreamOf(tier, tiers);
  if (downstream.length === 0) return false;
  const caughtTraces = new Set<string>();
  for (const below of downstream)
    for (const a of below.server) if (a.outcome === 'hit') caughtTraces.add(a.traceId);
  for (let i = 1; i < executions.length; i++) if (!caughtTraces.has(executions[i]!.traceId)) return false;
  return true;
}

/**
 * One finding per key and class: when several tiers executed the key twice, the duplicate is
 * reported at the deepest of them (where the side effect finally happened); a duplicate that
 * was not absorbed outranks one that was.
 */
function chooseReportedDuplicate(duplicates: Duplicate[], tiers: Map<string, Tier>): Duplicate | null {
  if (duplicates.length === 0) return null;
  const real = duplicates.filter((d) => !d.absorbed);
  const confirmed = real.filter((d) => d.confirmed);
  const pool = confirmed.length > 0 ? confirmed : real.length > 0 ? real : duplicates;
  const deepest = pool.filter(
    (candidate) =>
      !pool.some((other) => other !== candidate && downstreamOf(candidate.tier, tiers).includes(other.tier)),
  );
  const ranked = (deepest.length > 0 ? deepest : pool).sort(
    (a, b) =>
      compareStrings(
        tierName(a.tier.service, a.tier.operation),
        tierName(b.tier.service, b.tier.operation),
      ) || compareStrings(a.executions[0]!.tenant, b.executions[0]!.tenant),
  );
  return ranked[0]!;
}

/**
 * Executions in the store keyscope derives when spans name no store and declare no scope
 * (`<service>/unknown`, store-id.ts), on different nodes: they may have shared a store or not, so
 * no cause within one store can be claimed for them.
 */
function storeUnknownAcrossNodes(executions: readonly ServerAttempt[]): boolean {
  const unknown = executions.every(
    (e) => e.scope === '' && e.store === derivedStoreId(e.placement, '', e.tenant),
  );
  return unknown && distinct(executions.map((e) => e.placement.node)).length >= 2;
}

/**
 * Race or expiry. A repeat that ran while an earlier execution's request was still in flight got
 * past a store without an in-flight lock (race); a repeat that came after every earlier request
 * had finished should have been replayed, so the store had forgotten the key (ttl_expired). When
 * a key shows both, the expiry is reported: it is the one a longer-lived key would have stopped.
 * Ends and starts are compared allowing for a millisecond clock (`endedBefore`).
 * Requests are judged on the SERVER span that carried the key when the decision was recorded on a
 * short child span, because without a lock the key is written only when the request finishes.
 */
function causeOfRepeat(
  executions: readonly ServerAttempt[],
  evidence: readonly Attempt[],
): 'race' | 'ttl_expired' {
  const windows = executions.map((execution) => requestWindowOf(execution, evidence));
  for (let j = 1; j < windows.length; j++) {
    const repeat = windows[j]!;
    // Nearest first: a racing repeat overlaps the execution just before it.
    let overlapsEarlier = false;
    for (let i = j - 1; i >= 0 && !overlapsEarlier; i--) {
      const a = windows[i]!;
      overlapsEarlier = !endedBefore(a.end, repeat.start) && !endedBefore(repeat.end, a.start);
    }
    if (!overlapsEarlier) return 'ttl_expired';
  }
  return 'race';
}

function keyCollision(
  evidence: readonly Attempt[],
): { cause: FindingCause; service: string; operation: string; second: ServerAttempt } | null {
  const server = evidence.filter((a): a is ServerAttempt => a.kind === 'server' && a.tenant !== '');
  const tenants = distinct(server.map((a) => a.tenant));
  if (tenants.length < 2) return null;
  // The first attempt of a second tenant: when the key began to be shared.
  const second = server.find((a) => a.tenant !== server[0]!.tenant)!;
  // Worst case: a store replayed to one tenant the result it stored for another. The owner is the
  // store's first execution (attempts are in start order), if it started no later than the hit.
  const firstMiss = new Map<string, ServerAttempt>();
  for (const a of server) if (a.outcome === 'miss' && !firstMiss.has(a.store)) firstMiss.set(a.store, a);
  for (const hit of server) {
    if (hit.outcome !== 'hit') continue;
    const first = firstMiss.get(hit.store);
    const owner = first !== undefined && first.startUnixMillis <= hit.startUnixMillis ? first : undefined;
    if (owner !== undefined && owner.tenant !== hit.tenant) {
      return {
        cause: 'cross_tenant_replay',
        service: hit.placement.service,
        operation: endpointOf(hit, evidence),
        second,
      };
    }
  }
  const first = server[0]!;
  return {
    cause: 'shared_key',
    service: first.placement.service,
    operation: endpointOf(first, evidence),
    second,
  };
}

/** What `draft` builds one finding from. */
interface DraftInput {
  key: string;
  findingClass: FindingClass;
  cause: FindingCause;
  tier: Tier;
  executions: ServerAttempt[];
  /**
   * The attempt that should not have run (or reached where it did): the second execution of a
   * duplicate, the first attempt in a second store of a scope violation, the second tenant's
   * first attempt of a key collision.
   */
  repeat: ServerAttempt;
  /** Every attempt of the key, in start order. */
  evidence: Attempt[];
  routing: RoutingLookup;
  config: DetectorConfig;
}

/** A finding of `input.key` at `input.tier`. */
function draft(input: DraftInput): FindingDraft {
  const { key, findingClass, cause, tier, executions, repeat, evidence, routing, config } = input;
  const nodes = distinct(tier.landed.map((a) => a.placement.node).filter((n) => n !== ''));
  const stores = distinct(tier.server.map((a) => a.store));
  const tenants = distinct(evidence.map((a) => a.tenant).filter((t) => t !== ''));
  const seen = spanOf(evidence);
  const links = new SendLinks(tier, evidence);
  // Executions are measured on their requests (the SERVER span when the decision is a child span).
  let gapMillis: number | null = null;
  let idleMillis: number | null = null;
  if (executions.length >= 2) {
    const first = requestWindowOf(executions[0]!, evidence);
    const second = requestWindowOf(executions[1]!, evidence);
    gapMillis = second.start - first.start;
    idleMillis = second.start - first.end;
  }
  return {
    id: findingId(findingClass, partitionKey(evidence[0]!, config)),
    key,
    class: findingClass,
    cause,
    severity: SEVERITY[findingClass],
    service: tier.service,
    operation: tier.operation,
    tenant: tenants[0] ?? '',
    tenants,
    stores: stores.slice(0, config.maxStoresPerFinding),
    nodes: nodes.slice(0, config.maxStoresPerFinding),
    storesTotal: stores.length,
    nodesTotal: nodes.length,
    executions: executions.length,
    method: methodOf(tier, executions, evidence),
    retriedBy: retriedBy(tier, executions, links),
    gapMillis,
    idleMillis,
    ...retryTiming(tier, executions, repeat, links, executionSpans(evidence), evidence),
    routing: {
      affinityBroken: nodes.length >= 2,
      event: brokenBy(tier, executions, repeat, routing(tier.service), config),
    },
    firstSeenUnixMillis: seen.from,
    repeatUnixMillis: repeat.startUnixMillis,
    lastSeenUnixMillis: seen.to,
    attempts: evidence,
    suspicion: null,
    evidenceCapped: evidence.length >= config.maxAttemptsPerKey,
  };
}

/** The HTTP method of the tier's first execution's request, else of its first landing's. */
function methodOf(
  tier: Tier,
  executions: readonly ServerAttempt[],
  evidence: readonly Attempt[],
): HttpMethod | '' {
  for (const attempt of [...executions, ...tier.landed]) {
    const request = requestOf(attempt, evidence);
    if ((request.kind === 'server' || request.kind === 'arrival') && request.method !== '')
      return request.method;
  }
  return '';
}

/**
 * The earliest start and the latest end of `attempts`, in one pass (a spread into Math.min
 * overflows the stack for a key with a few hundred thousand attempts).
 */
function spanOf(attempts: readonly Attempt[]): { from: number; to: number } {
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  for (const a of attempts) {
    if (a.startUnixMillis < from) from = a.startUnixMillis;
    if (a.endUnixMillis > to) to = a.endUnixMillis;
  }
  return { from, to };
}

/**
 * Each landing traced up its parents to the send that delivered it. A send is the CLIENT span
 * that called this tier when the key's evidence holds it, else the parent of the request's SERVER
 * span even though that span is not in the evidence: HTTP client instrumentation records request
 * headers (the key) only once a response arrives, so the send that timed out carries no key and
 * is known only as the parent id its server spans name.
 */
class SendLinks {
  readonly clients: ClientAttempt[];
  readonly #spans: SpanIndex;

  constructor(
    private readonly tier: Tier,
    evidence: readonly Attempt[],
  ) {
    this.clients = evidence.filter((a): a is ClientAttempt => a.kind === 'client');
    this.#spans = spanIndexOf(evidence);
  }

  /**
   * The send that delivered `landed`: its id (trace id / span id) and, when the key's evidence
   * holds it, its CLIENT span. Undefined when the request's parent is a span of the evidence that
   * is no send (a caller that made its call without a CLIENT span), or it names no parent.
   */
  sendOf(landed: Attempt): { id: string; client: ClientAttempt | undefined } | undefined {
    let current = landed;
    for (let hops = 0; hops < 4; hops++) {
      if (current.parentSpanId === '') return undefined;
      const id = `${current.traceId}/${current.parentSpanId}`;
      const parent = this.#spans.get(current.traceId, current.parentSpanId);
      if (parent === undefined) {
        // An unseen parent of a span of this tier: the keyless CLIENT span of the send.
        return current.placement.service === this.tier.service ? { id, client: undefined } : undefined;
      }
      if (parent.kind === 'client' && parent.placement.service !== this.tier.service)
        return { id, client: parent };
      current = parent;
    }
    return undefined;
  }
}

/**
 * Who sent the repeat. Two landings under one send mean something between client and server
 * retried (a proxy or load balancer retrying a non-idempotent request), whether or not that send's
 * CLIENT span carries the key; landings under different sends mean the client retried. Without
 * that linkage, count the callers' sends instead.
 */
function retriedBy(tier: Tier, executions: ServerAttempt[], links: SendLinks): RetriedBy {
  const landings = executions.length >= 2 ? executions : tier.server;
  const sendsOfLandings = landings.map((landed) => links.sendOf(landed)).filter((s) => s !== undefined);
  const distinctSends = new Set(sendsOfLandings.map((s) => s.id));
  if (distinctSends.size < sendsOfLandings.length) return 'proxy';

  const { clients } = links;
  if (clients.length === 0) return 'unknown';
  if (distinctSends.size >= 2) return 'client';
  const sends = callerSends(tier, sendsOfLandings, clients);
  if (sends.length === 0) return 'unknown';
  let resends = Number.NEGATIVE_INFINITY;
  for (const send of sends) if (send.resendCount > resends) resends = send.resendCount;
  const sendCount = Math.max(sends.length, 1 + resends);
  if (sendCount >= 2) return 'client';
  return landings.length >= 2 ? 'proxy' : 'unknown';
}

/** The CLIENT spans of the services that call this tier (linked ones name them, else any other). */
function callerSends(
  tier: Tier,
  linked: readonly { client: ClientAttempt | undefined }[],
  clients: readonly ClientAttempt[],
): ClientAttempt[] {
  const callerServices = new Set<string>();
  for (const send of linked) if (send.client !== undefined) callerServices.add(send.client.placement.service);
  return clients.filter((c) =>
    callerServices.size > 0 ? callerServices.has(c.placement.service) : c.placement.service !== tier.service,
  );
}

/**
 * How the repeat's timing compares with the wait that caused it: how long the caller waited
 * before it gave up (the failed send before the repeat — the one that delivered the first
 * execution when the key's evidence links it, else the latest failed send that started before the
 * repeat), how long the first execution ran (its request, or the decision and side-effect spans
 * under it when they end later), and whether it outlived that wait. A first execution whose
 * request's span ended at its caller's disconnect (`clipped`) was still running when the caller
 * left: it outlived the wait, having run at least `firstExecutionMillis`.
 */
function retryTiming(
  tier: Tier,
  executions: readonly ServerAttempt[],
  repeat: ServerAttempt,
  links: SendLinks,
  spanOfExecution: (execution: ServerAttempt) => ExecutionSpan,
  evidence: readonly Attempt[],
): Pick<
  FindingDraft,
  | 'callerWaitMillis'
  | 'retryAfter'
  | 'firstExecutionMillis'
  | 'firstExecutionClipped'
  | 'firstExecutionLost'
  | 'outlivedCallerWait'
> {
  const first = executions[0];
  let firstExecutionMillis: number | null = null;
  let firstExecutionClipped = false;
  let firstExecutionLost = false;
  if (first !== undefined && first !== repeat && first.startUnixMillis <= repeat.startUnixMillis) {
    if (requestSpanUnseen(first, evidence)) firstExecutionLost = true;
    else {
      const window = requestWindowOf(first, evidence);
      const span = spanOfExecution(first);
      firstExecutionMillis = Math.max(window.end, span.endUnixMillis) - window.start;
      firstExecutionClipped = span.clipped;
    }
  }
  const sends = callerSends(
    tier,
    tier.server.map((landed) => links.sendOf(landed) ?? { client: undefined }),
    links.clients,
  );
  const failedBefore = sends.filter(
    (send) => failedSend(send) && send.startUnixMillis < repeat.startUnixMillis,
  );
  const ofFirst = first === undefined ? undefined : links.sendOf(first)?.client;
  const gaveUp =
    ofFirst !== undefined && failedSend(ofFirst) && ofFirst.startUnixMillis < repeat.startUnixMillis
      ? ofFirst
      : failedBefore[failedBefore.length - 1];
  const retryAfter = gaveUp === undefined ? 'unknown' : retryAfterSend(gaveUp);
  const callerWaitMillis =
    gaveUp === undefined || retryAfter !== 'timeout' ? null : gaveUp.endUnixMillis - gaveUp.startUnixMillis;
  // A request whose caller timed out and whose span lasted (about) as long as the caller waited
  // ended at the disconnect — the HTTP instrumentation ends it when the caller's socket closes —
  // whatever status it shows: it ran at least that long. It starts a network hop after its send
  // and ends a hop after the caller left, so its duration is the wait within a few milliseconds,
  // either side: read against the wait, not past it, or that noise decides "outlived".
  if (
    firstExecutionMillis !== null &&
    callerWaitMillis !== null &&
    gaveUp === ofFirst &&
    Math.abs(firstExecutionMillis - callerWaitMillis) <= disconnectToleranceMillis(callerWaitMillis)
  )
    firstExecutionClipped = true;
  return {
    callerWaitMillis,
    retryAfter,
    firstExecutionMillis,
    firstExecutionClipped,
    firstExecutionLost,
    outlivedCallerWait:
      callerWaitMillis === null || firstExecutionMillis === null
        ? null
        : firstExecutionClipped || firstExecutionMillis > callerWaitMillis,
  };
}

/**
 * How much shorter than its caller's wait a request cut off by the caller's disconnect can read:
 * the hops at its start and end, and the clocks of two processes.
 */
function disconnectToleranceMillis(callerWaitMillis: number): number {
  return Math.max(50, callerWaitMillis * 0.02);
}

/** How a failed send ended, as `Finding.retryAfter` names it. */
function retryAfterSend(send: ClientAttempt): RetryAfter {
  if (send.statusCode === 502 || send.statusCode === 504) return 'proxy_error';
  if (send.statusCode !== 0) return 'error_response';
  return readSend(send) === 'reset' ? 'reset' : 'timeout';
}

/** A send the caller gave up on: no response (a timeout, a reset) or a 5xx. */
function failedSend(send: ClientAttempt): boolean {
  return send.statusCode === 0 || send.statusCode >= 500;
}

/**
 * The routing event that broke the key's retry path: one on the node (or the cluster or region,
 * for a failover) where an earlier attempt of the key at this tier landed — an execution first,
 * else a landing that got no proper answer (a store error, a failed request, a response never
 * sent; an `in_progress` or a replay was answered as it should) — whose window comes within
 * `routingSlackMillis` of the interval from the key's first attempt at the tier to `repeat`.
 * Never an event elsewhere: a node that went down and came back before the key's first attempt
 * did not break its path, even if the repeat ran on it. The nearest such event wins, then the
 * latest to start (the last break before the repeat), then the smallest id.
 */
function brokenBy(
  tier: Tier,
  executions: readonly ServerAttempt[],
  repeat: ServerAttempt,
  events: readonly RoutingEvent[],
  config: DetectorConfig,
): RoutingEvent | null {
  if (events.length === 0) return null;
  const fromMillis = tier.landed[0]!.startUnixMillis;
  const toMillis = repeat.startUnixMillis;
  // Attempts before the repeat, less the repeat's own request (its SERVER span on its node).
  const before = (a: Attempt) =>
    a !== repeat &&
    compareAttempts(a, repeat) < 0 &&
    !(a.traceId === repeat.traceId && a.placement.node === repeat.placement.node);
  const executed = executions.filter(before).map((a) => a.placement);
  // A landing counts when it got no proper answer (a store error, a failed request, one whose
  // response was lost): an `in_progress` or a replay answered as it should, and broke nothing.
  const landed = tier.landed.filter((a) => before(a) && unanswered(a)).map((a) => a.placement);
  let best: RoutingEvent | null = null;
  let bestRank = 0;
  let bestDistance = 0;
  for (const event of events) {
    const distance = Math.max(0, event.startUnixMillis - toMillis, fromMillis - event.endUnixMillis);
    if (distance > config.routingSlackMillis) continue;
    const rank = executed.some((p) => eventCovers(event, p))
      ? 0
      : landed.some((p) => eventCovers(event, p))
        ? 1
        : -1;
    if (rank < 0) continue;
    if (
      best === null ||
      rank < bestRank ||
      (rank === bestRank &&
        (distance < bestDistance ||
          (distance === bestDistance &&
            (event.startUnixMillis > best.startUnixMillis ||
              (event.startUnixMillis === best.startUnixMillis && event.id < best.id)))))
    ) {
      best = event;
      bestRank = rank;
      bestDistance = distance;
    }
  }
  return best;
}

/** A landing that got no proper answer: a store error, a failed request, a response never sent. */
function unanswered(landing: Attempt): boolean {
  if (landing.kind === 'server')
    return landing.outcome === 'error' || landing.outcome === 'miss' || landing.failed;
  return landing.kind === 'arrival' && (landing.failed || landing.statusCode === 0);
}

export function compareAttempts(a: Attempt, b: Attempt): number {
  return (
    a.startUnixMillis - b.startUnixMillis ||
    compareStrings(a.traceId, b.traceId) ||
    compareStrings(a.spanId, b.spanId)
  );
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function distinct(values: readonly string[]): string[] {
  return [...new Set(values)];
}
