import type { Attempt, ScopeLevel } from '@keyscope/attempts';
import { covers, type SpreadLevel, spreadOf } from '../coverage/scope-report.ts';
import { eventCovers, type RoutingEvent } from '../routing/routing-event.ts';
import { endpointOf } from './endpoint.ts';
import { executionOutcomes } from './execution-outcome.ts';
import { type Finding, type FindingClass, RETRY_AFTER, type RetryAfter } from './finding.ts';

/**
 * The advice an incident carries, following docs/design.md's decision boundary: dedup is sound only
 * while scope, pinning or downstream idempotency holds; when the key scope is narrower, name the
 * smallest scope that covers what was observed — and never recommend a global namespace by
 * reflex, because it puts a cross-region write and a hot partition on every mutation.
 *
 * The advice is a list of sentences, each chosen from `ADVICE_SENTENCES` by a condition on the
 * facts of the incident's keys (`AdviceFacts`) and worded from those facts alone: a sentence is
 * said only when the keys bear it out, and its numbers are counted for the claim it makes — per
 * key ("each key ran in 2 stores") or for the incident ("3 stores in all"), "X of N" with N the
 * incident's keys and the rest named. docs/incidents.md lists every sentence and its condition.
 */
export function adviceFor(findingClass: FindingClass, facts: AdviceFacts): string {
  return adviceSentences(findingClass, facts)
    .map((sentence) => sentence.text)
    .join(' ');
}

/** The sentences of an incident's advice, in order, each with the id of its rule. */
export function adviceSentences(findingClass: FindingClass, facts: AdviceFacts): AdviceSentence[] {
  const said: AdviceSentence[] = [];
  for (const rule of ADVICE_SENTENCES) {
    if (rule.classes !== 'all' && !rule.classes.includes(findingClass)) continue;
    if (rule.classes === 'all' && findingClass === 'key_collision') continue;
    if (!rule.when(facts, said)) continue;
    said.push({ id: rule.id, text: rule.say(facts) });
  }
  return said;
}

export interface AdviceSentence {
  readonly id: string;
  readonly text: string;
}

/** One sentence the advice can contain: which classes, the facts that select it, its words. */
export interface AdviceRule {
  readonly id: string;
  /** The classes whose incidents can say it; `all`: every class but `key_collision`. */
  readonly classes: readonly FindingClass[] | 'all';
  /** The condition, in words (docs/incidents.md). */
  readonly condition: string;
  /** The condition; `said` holds the sentences chosen before it. */
  readonly when: (facts: AdviceFacts, said: readonly AdviceSentence[]) => boolean;
  readonly say: (facts: AdviceFacts) => string;
}

const DUPLICATES: readonly FindingClass[] = ['cross_store_duplicate', 'scope_violation'];
const SCOPED: readonly FindingClass[] = ['cross_store_duplicate', 'scope_violation', 'suspected_duplicate'];

/** Every sentence, in the order an advice says them. */
export const ADVICE_SENTENCES: readonly AdviceRule[] = [
  {
    id: 'executed_in_stores',
    classes: ['cross_store_duplicate'],
    condition: 'always: how many stores each key executed in, and how many in all when more',
    when: () => true,
    say: (f) =>
      `${eachKey(f)} executed in ${range(f.executionStoresPerKey)} different dedup stores${storesInAll(f)}: keys have ${declaredText(f)}, but ${retriesReached(f)}.`,
  },
  {
    id: 'reaches_stores',
    classes: ['scope_violation'],
    condition: 'always: how many stores the retries of each key reached',
    when: () => true,
    say: (f) =>
      `${eachKey(f, "'s retries")} already reach ${range(f.storesPerKey)} dedup stores${storesInAll(f)} (keys have ${declaredText(f)}; ${retriesReached(f)}); nothing has executed twice yet, but the next slow response will.`,
  },
  {
    id: 'widen_scope',
    classes: [...DUPLICATES, 'absorbed_duplicate'],
    condition: 'the declared scope does not cover where the retries went, and they stayed within one region',
    when: (f) => narrower(f) && f.spread !== 'global',
    say: (f) => `Smallest sound fix: ${widenFix(f)}`,
  },
  {
    id: 'pin_not_global',
    classes: [...DUPLICATES, 'absorbed_duplicate'],
    condition: 'the declared scope does not cover where the retries went, and they crossed regions',
    when: (f) => narrower(f) && f.spread === 'global',
    say: () => PIN_NOT_GLOBAL,
  },
  {
    id: 'check_shared_store',
    classes: SCOPED,
    condition: 'the declared scope covers every place the retries went, yet a key reached two or more stores',
    when: (f) => f.declaredScope !== 'unknown' && !narrower(f) && f.storesPerKey.max >= 2,
    say: (f) =>
      `The declared ${f.declaredScope} scope covers every place these retries went, yet ${f.keys === 1 ? 'the key' : 'keys'} reached ${range(f.storesPerKey)} stores: check that every instance really shares the store it reports (one idempotency.store per ${f.declaredScope}).`,
  },
  {
    id: 'store_unknown',
    classes: ['same_store_duplicate'],
    condition:
      'executions ran on different nodes of a service whose spans name no store and declare no scope',
    when: (f) => f.storeUnknown,
    say: () =>
      "Executions of one key ran on different nodes of a service whose spans name no dedup store and declare no key scope, so keyscope cannot tell whether they shared a store. Declare the scope the service's keys have: idempotency.scope (or idempotency.store) on the decision span, or the service's scope in the attribute mapping (scopes); a node-local store then shows as the cross-store duplicate it is.",
  },
  {
    id: 'race',
    classes: ['same_store_duplicate'],
    condition: "a key's executions overlapped in time in one store",
    when: (f) => f.race,
    say: () =>
      'Attempts of one key overlapped in time and both executed in the same store: the store admits a key without an in-flight lock. Record the key as in progress atomically before executing (insert-if-absent) and answer concurrent attempts with 409.',
  },
  {
    id: 'slow_node_before_ttl',
    classes: ['same_store_duplicate'],
    condition:
      "a repeat came after the store's retention, and the incident's routing event is a latency or error spike",
    when: (f) =>
      f.ttl && f.firstInEvent > 0 && (f.event?.type === 'latency_spike' || f.event?.type === 'error_spike'),
    say: (f) =>
      `${f.firstInEvent === f.keys ? (f.keys === 1 ? "The key's first execution" : `The first executions of all ${f.keys} keys`) : `The first executions of ${f.firstInEvent} of ${f.keys} keys`} ran on ${f.event!.node} during its ${f.event!.type === 'latency_spike' ? 'latency spike' : 'error spike'}: ${f.event!.type === 'latency_spike' ? 'they outlasted their callers, who retried' : 'their callers retried'} after the store had forgotten the key.`,
  },
  {
    id: 'ttl_expired',
    classes: ['same_store_duplicate'],
    condition: "a repeat came after the store's retention of the key (no overlap)",
    when: (f) => f.ttl,
    say: (f) =>
      `A retry arrived after the store had forgotten the key: a key's second execution began up to ${formatDuration(f.longestGapMillis)} after its first. Keep keys at least as long as clients retry (their longest backoff plus total timeout), or make clients give up before the key expires.`,
  },
  {
    id: 'effect_unknown',
    classes: ['suspected_duplicate'],
    condition: 'some keys ran again after an admitted attempt that failed with its effect unknown',
    when: (f) => f.effectUnknown || !f.executionUnseen,
    say: () =>
      'A key ran again after an earlier attempt of it had been admitted and failed. The first attempt failed after admission; whether its effect committed is unknown, so this is a double side effect only if it did. To settle it, record idempotency.effect (committed or none) on the decision or SERVER span of a request that fails after admission, or name the side-effect spans in the attribute mapping (sideEffectSpans, e.g. ledger.charge) and put the key on them.',
  },
  {
    id: 'execution_unseen',
    classes: ['suspected_duplicate'],
    condition: 'some keys executed once in the spans with marks of an execution whose spans were lost',
    when: (f) => f.executionUnseen,
    say: (f) =>
      `A key executed once in the spans, and the spans say an earlier attempt probably executed where its own spans were lost: a send reset or left unanswered as a node of the service went silent, a store answering in_progress for a lock no visible execution held. Check these keys against the system the side effect reaches (the payment processor): if it ran twice, the retry reached a store that had not seen the key (keys have ${declaredText(f)}).`,
  },
  {
    id: 'export_before_death',
    classes: ['suspected_duplicate'],
    condition: 'some keys are suspected on marks of an execution whose spans were lost',
    when: (f) => f.executionUnseen,
    say: () =>
      "Spans are lost when a process dies before its SDK exports them (SIGKILL, an OOM kill): export more often (the BatchSpanProcessor's scheduledDelayMillis), flush the SDK on SIGTERM within the grace period, and let the kernel's resets show in CLIENT spans (error.type).",
  },
  {
    id: 'suspects_reached_stores',
    classes: ['suspected_duplicate'],
    condition:
      "a key's attempts reached two or more stores or nodes, and the declared scope does not cover them",
    when: (f) => narrower(f) && (f.storesPerKey.max >= 2 || f.spread !== 'node'),
    say: (f) =>
      `Either way, ${retriesReached(f)}, beyond keys of ${declaredText(f)}: ${f.spread === 'global' ? PIN_NOT_GLOBAL : widenFix(f)}`,
  },
  {
    id: 'absorbed',
    classes: ['absorbed_duplicate'],
    condition: 'always',
    when: () => true,
    say: (f) =>
      `The front tier executed ${f.keys === 1 ? 'one key' : 'each key'} twice, and a downstream service's dedup caught the repeat: no double side effect, thanks to downstream idempotency. The front tier's keys have ${declaredText(f)} while ${retriesReached(f)}; fix it before relying on that.`,
  },
  {
    id: 'key_collision',
    classes: ['key_collision'],
    condition: 'always',
    when: () => true,
    say: (f) =>
      `Two tenants sent the same idempotency key into one namespace${f.crossTenantReplay ? ', and one was served the result stored for the other.' : '.'} Client-generated keys are unique per client at best: qualify the key with the tenant (a tenant-scoped namespace) rather than trusting clients to produce globally unique keys.`,
  },
  {
    id: 'proxy_retried',
    classes: [...SCOPED, 'same_store_duplicate'],
    condition: 'some keys were re-sent by a proxy or load balancer (two landings under one send)',
    when: (f) => f.proxies > 0,
    say: (f) =>
      `${ofKeys(f.proxies, f)} retried by a proxy or load balancer, not by the client: stop it from re-sending non-idempotent requests, or make it send a key's retries to the same store.`,
  },
  {
    id: 'retried_after_timeout',
    classes: 'all',
    condition: "some keys' callers timed out (no response) on the send before the repeat",
    when: (f) => f.retryAfter.timeout > 0,
    say: (f) =>
      `${ofKeys(f.retryAfter.timeout, f)} retried after the caller's send timed out, at ${formatDuration(f.timing.callerWaitMillis!)} (the median).`,
  },
  {
    id: 'retried_after_proxy_error',
    classes: 'all',
    condition: "some keys' sends before the repeat were answered 502 or 504 by a proxy",
    when: (f) => f.retryAfter.proxy_error > 0,
    say: (f) =>
      `${ofKeys(f.retryAfter.proxy_error, f)} retried after a proxy answered 502 or 504: the node it had forwarded the request to stopped answering.`,
  },
  {
    id: 'retried_after_reset',
    classes: 'all',
    condition: "some keys' sends before the repeat had their connection reset",
    when: (f) => f.retryAfter.reset > 0,
    say: (f) => `${ofKeys(f.retryAfter.reset, f)} retried after the connection was reset with no response.`,
  },
  {
    id: 'first_execution_durations',
    classes: 'all',
    condition: "some keys' first executions have a known duration (their SERVER span is in the spans)",
    when: (f) => f.timing.executionP90Millis !== null,
    say: (f) =>
      `First executions${f.timing.executionNode === '' ? '' : ` on ${f.timing.executionNode}`} ran ${f.timing.clipped > 0 ? 'at least ' : ''}${formatDuration(f.timing.executionP90Millis!)} at p90 (${f.timing.executionNodeCount === f.timing.known ? '' : `${f.timing.executionNodeCount} of them; `}${f.timing.known} of ${keysText(f)} known).`,
  },
  {
    id: 'first_executions_lost',
    classes: 'all',
    condition: "some keys' first executions have a decision span but no SERVER span in the spans",
    when: (f) => f.timing.lost > 0,
    say: (f) =>
      `${ofKeys(f.timing.lost, f, 'first execution')} of unknown duration: ${f.timing.lost === 1 ? 'its SERVER span is' : 'their SERVER spans are'} not in the spans (${lostWhere(f)}), only the decision span.`,
  },
  {
    id: 'first_executions_clipped',
    classes: 'all',
    condition: "some keys' first executions' SERVER spans ended at their caller's disconnect",
    when: (f) => f.timing.clipped > 0,
    say: (f) =>
      `${ofKeys(f.timing.clipped, f, 'first execution')} still running when ${f.timing.clipped === 1 ? 'its caller' : 'their callers'} left: ${f.timing.clipped === 1 ? 'its SERVER span' : 'their SERVER spans'} ended at the disconnect, so ${f.timing.clipped === 1 ? 'its' : 'their'} duration is a lower bound.`,
  },
  {
    id: 'outlived_wait',
    classes: 'all',
    condition: "some keys have both their caller's wait and their first execution's duration known",
    when: (f) => f.timing.judged > 0,
    say: (f) =>
      `${f.timing.outlived} of ${f.keys} first execution${f.keys === 1 ? '' : 's'} outlived the caller's wait${f.keys > f.timing.judged ? `; ${f.keys - f.timing.judged} unknown` : ''}.`,
  },
  {
    id: 'timing_is_context',
    classes: 'all',
    condition: 'a timing sentence was said',
    when: (_f, said) => said.some((s) => TIMING_SENTENCES.has(s.id)),
    say: () => 'A longer timeout would make such repeats rarer, not impossible: it is context, not the fix.',
  },
];

const TIMING_SENTENCES: ReadonlySet<string> = new Set([
  'retried_after_timeout',
  'first_execution_durations',
  'outlived_wait',
]);

const PIN_NOT_GLOBAL =
  'Retries crossed regions. Widening the key namespace to global would put a cross-region write on every mutation; prefer pinning retries of a key to the region that first admitted it (fail the retry rather than fail over mid-request), or make the side effect idempotent downstream.';

/** What a key's retries reaching a spread level means, worded to follow "retries reached". */
const SPREAD_TEXT: Record<SpreadLevel, string> = {
  node: 'one node',
  cluster: 'other nodes of their cluster',
  region: 'other clusters of their region',
  global: 'other regions',
};

function narrower(f: AdviceFacts): boolean {
  return f.declaredScope === 'unknown' || !covers(f.declaredScope, f.spread);
}

function declaredText(f: AdviceFacts): string {
  return f.declaredScope === 'unknown' ? 'an undeclared scope' : `${f.declaredScope} scope`;
}

function keysText(f: AdviceFacts): string {
  return f.keys === 1 ? '1 key' : `${f.keys} keys`;
}

/** "Each key" / "The key", with `suffix` ("'s retries"). */
function eachKey(f: AdviceFacts, suffix = ''): string {
  return f.keys === 1 ? `The key${suffix}` : `Each key${suffix}`;
}

/** "N of M keys were" (or "the key was", "every key was" when N is all of them). */
function ofKeys(count: number, f: AdviceFacts, noun = 'key'): string {
  const verb = count === 1 ? 'was' : 'were';
  if (count === f.keys) return f.keys === 1 ? `The ${noun} ${verb}` : `All ${f.keys} ${noun}s ${verb}`;
  return `${count} of ${f.keys} ${noun}s ${verb}`;
}

function range({ min, max }: { min: number; max: number }): string {
  return min === max ? `${max}` : `${min} to ${max}`;
}

function storesInAll(f: AdviceFacts): string {
  return f.stores > f.storesPerKey.max ? ` (${f.stores} stores in all)` : '';
}

/** Where the retries of the incident's keys went: every key's, or the widest of some. */
function retriesReached(f: AdviceFacts): string {
  const widest = f.spreadCounts[f.spread] ?? 0;
  if (f.spread === 'node')
    return f.keys === 1 ? 'its retries stayed on one node' : "each key's retries stayed on one node";
  if (widest === f.keys)
    return f.keys === 1
      ? `its retries reached ${SPREAD_TEXT[f.spread]}`
      : `the retries of each key reached ${SPREAD_TEXT[f.spread]}`;
  return `the retries of ${widest} of ${f.keys} keys reached ${SPREAD_TEXT[f.spread]}`;
}

function widenFix(f: AdviceFacts): string {
  const pinTo = f.declaredScope === 'unknown' ? 'endpoint' : f.declaredScope;
  return `widen the key namespace to ${f.spread} scope (the smallest that covers every observed retry), or enforce pinning of a key's retries to one ${pinTo}, or make the side effect idempotent downstream.`;
}

function lostWhere(f: AdviceFacts): string {
  const event = f.event;
  if (event !== null && (event.type === 'node_down' || event.type.endsWith('_failover')))
    return `lost with ${event.node || event.cluster || event.region}`;
  return 'lost, dropped, or never carrying the key';
}

/**
 * What the timing of an incident's repeats says, to the nearest 100 ms: the median wait of the
 * callers whose send before the repeat timed out (null when none did), and the p90 duration of the
 * known first executions on the node that ran most of them (null without any).
 */
export interface RetryTimingSummary {
  callerWaitMillis: number | null;
  executionNode: string;
  executionP90Millis: number | null;
  /** Keys whose first execution's duration on `executionNode` is known: what the p90 is of. */
  executionNodeCount: number;
  /** Keys whose first execution has a known duration. */
  known: number;
  /** Keys whose first execution's SERVER span is not in the spans (`Finding.firstExecutionLost`). */
  lost: number;
  /** Keys whose first execution's SERVER span ended at its caller's disconnect (of the known). */
  clipped: number;
  /** Keys whose first execution outlived the caller's wait, of those where both are known. */
  outlived: number;
  judged: number;
}

/** What one finding contributes to its incident's advice, computed once when it is placed. */
export interface FindingFacts {
  /**
   * Every store the key's attempts at its tier consulted and every node they landed on, read from
   * its attempts: the finding's own lists stop at `maxStoresPerFinding`, its incident's totals do not.
   * A suspect's nodes include those its evidence says the unseen execution ran on.
   */
  stores: readonly string[];
  nodes: readonly string[];
  /** Distinct stores among the key's executions at its tier (admissions that did not execute left out). */
  executionStores: number;
  /** `Finding.method`. */
  method: string;
  declared: Partial<Record<ScopeLevel, number>>;
  spread: SpreadLevel;
  proxy: boolean;
  cause: Finding['cause'];
  gapMillis: number;
  /** `Finding.callerWaitMillis`; null when unknown. */
  callerWaitMillis: number | null;
  retryAfter: RetryAfter;
  /** The node of the key's first admission at its tier ('' when unknown); its first execution's duration. */
  executionNode: string;
  executionMillis: number | null;
  /** `Finding.firstExecutionLost`. */
  executionLost: boolean;
  /** The first execution ran where the finding's routing event was, while it was. */
  firstInEvent: boolean;
  outlived: boolean | null;
  /** `Finding.firstExecutionClipped`. */
  clipped: boolean;
}

/** The facts of all of an incident's findings together. */
export interface AdviceFacts {
  keys: number;
  /** The HTTP method most of the keys' requests were sent with; '' when the spans name none. */
  method: string;
  /** Distinct stores over all keys. */
  stores: number;
  /** The fewest and the most stores one key reached. */
  storesPerKey: { min: number; max: number };
  /** The fewest and the most stores one key executed in. */
  executionStoresPerKey: { min: number; max: number };
  declared: Partial<Record<ScopeLevel, number>>;
  /** The scope most decisions declared. */
  declaredScope: ScopeLevel | 'unknown';
  /** The widest spread of one key, and how many keys reached each level. */
  spread: SpreadLevel;
  spreadCounts: Partial<Record<SpreadLevel, number>>;
  proxies: number;
  race: boolean;
  ttl: boolean;
  /** Some findings ran on different nodes of a service whose spans name no store (`store_unknown`). */
  storeUnknown: boolean;
  crossTenantReplay: boolean;
  /** Some findings are suspected on an admitted attempt that failed (`effect_unknown`). */
  effectUnknown: boolean;
  /** Some findings are suspected on marks of an execution whose spans were lost (`execution_unseen`). */
  executionUnseen: boolean;
  /** The longest time from a key's first execution's start to its repeat's. */
  longestGapMillis: number;
  /** Keys whose first execution ran on the node of the incident's routing event, within its window. */
  firstInEvent: number;
  /** Keys by how the caller's send before the repeat ended. */
  retryAfter: Record<RetryAfter, number>;
  timing: RetryTimingSummary;
  /** The incident's routing event; null when it is grouped by time. */
  event: RoutingEvent | null;
}

/** Spread levels from narrowest to widest. */
export const SPREAD_ORDER: readonly SpreadLevel[] = ['node', 'cluster', 'region', 'global'];

export function emptyRetryAfter(): Record<RetryAfter, number> {
  return Object.fromEntries(RETRY_AFTER.map((reason) => [reason, 0])) as Record<RetryAfter, number>;
}

export function factsOf(finding: Finding): FindingFacts {
  const declared: Partial<Record<ScopeLevel, number>> = {};
  for (const a of finding.attempts) {
    if (a.kind === 'server' && a.scope !== '') declared[a.scope] = (declared[a.scope] ?? 0) + 1;
  }
  const landed = finding.attempts.filter(
    (a) =>
      (a.kind === 'server' || a.kind === 'arrival') &&
      a.placement.service === finding.service &&
      endpointOf(a, finding.attempts) === finding.operation,
  );
  const firstExecution = landed.find((a) => a.kind === 'server' && a.outcome === 'miss');
  const outcomes = executionOutcomes(finding.attempts);
  const executionStores = new Set<string>();
  for (const a of landed)
    if (a.kind === 'server' && a.outcome === 'miss' && outcomes(a) !== 'not_executed')
      executionStores.add(a.store);
  // As evaluate-key.ts lists them, before the finding's lists are cut.
  const stores = new Set<string>();
  const nodes = new Set<string>();
  for (const a of landed) {
    if (a.kind === 'server') stores.add(a.store);
    if (a.placement.node !== '') nodes.add(a.placement.node);
  }
  let spread = spreadOf(landed);
  // A suspect's unseen execution ran where its evidence points: a node its visible attempts did
  // not land on is a node the key's retries crossed to.
  for (const evidence of finding.suspicion?.evidence ?? []) {
    if (evidence.store !== '') stores.add(evidence.store);
    if (evidence.node !== '' && !nodes.has(evidence.node)) {
      nodes.add(evidence.node);
      if (spread === 'node') spread = 'cluster';
    }
  }
  return {
    stores: [...stores],
    nodes: [...nodes],
    executionStores: executionStores.size,
    method: finding.method ?? '',
    declared,
    spread,
    proxy: finding.retriedBy === 'proxy',
    cause: finding.cause,
    // From start to start: a first execution's end may be its caller's disconnect, not its own.
    gapMillis: finding.gapMillis ?? 0,
    callerWaitMillis: finding.callerWaitMillis ?? null,
    retryAfter: finding.retryAfter ?? 'unknown',
    executionNode: firstExecution?.placement.node ?? '',
    executionMillis: finding.firstExecutionMillis ?? null,
    executionLost: finding.firstExecutionLost ?? false,
    firstInEvent: firstExecution !== undefined && ranDuring(firstExecution, finding.routing.event),
    outlived: finding.outlivedCallerWait ?? null,
    clipped: finding.firstExecutionClipped ?? false,
  };
}

/** Whether `attempt` ran where `event` was while it was (its request overlaps the event's window). */
function ranDuring(attempt: Attempt, event: RoutingEvent | null): boolean {
  return (
    event !== null &&
    eventCovers(event, attempt.placement) &&
    attempt.startUnixMillis <= event.endUnixMillis &&
    attempt.endUnixMillis >= event.startUnixMillis
  );
}

export function mostDeclared(counts: Partial<Record<ScopeLevel, number>>): ScopeLevel | 'unknown' {
  let best: ScopeLevel | 'unknown' = 'unknown';
  let most = 0;
  for (const [scope, count] of Object.entries(counts) as [ScopeLevel, number][]) {
    if (count > most) [best, most] = [scope, count];
  }
  return best;
}

export function formatDuration(millis: number): string {
  if (millis >= 3_600_000) return `${(millis / 3_600_000).toFixed(1)} h`;
  if (millis >= 60_000) return `${(millis / 60_000).toFixed(1)} min`;
  return `${(millis / 1000).toFixed(1)} s`;
}
