import type { Attempt, HttpMethod } from '@keyscope/attempts';
import type { RoutingEvent } from '../routing/routing-event.ts';

export type FindingClass =
  | 'cross_store_duplicate'
  | 'same_store_duplicate'
  | 'absorbed_duplicate'
  | 'suspected_duplicate'
  | 'key_collision'
  | 'scope_violation';

export const FINDING_CLASSES: readonly FindingClass[] = [
  'cross_store_duplicate',
  'same_store_duplicate',
  'absorbed_duplicate',
  'suspected_duplicate',
  'key_collision',
  'scope_violation',
];

export type Severity = 'critical' | 'high' | 'warning';

/**
 * Why a finding (and its incident) is less severe than its class: `replay_unseen` — its repeat
 * rests only on outcomes read from HTTP responses, in one store on one node, at a tier that has
 * shown no replay, where a replay whose `Idempotent-Replayed` header the HTTP instrumentation did
 * not capture reads the same (replay-header.ts).
 */
export type SeverityReason = 'replay_unseen';

/**
 * What a finding of each class says of its key: `executed` — its tier executed the key twice (an
 * absorbed duplicate's front tier did, and a downstream dedup caught the repeat); `effect` — the
 * side effect itself ran twice. A suspicion, a scope violation and a collision say neither.
 */
export const RAN_TWICE: Readonly<Record<FindingClass, { executed: boolean; effect: boolean }>> = {
  cross_store_duplicate: { executed: true, effect: true },
  same_store_duplicate: { executed: true, effect: true },
  absorbed_duplicate: { executed: true, effect: false },
  suspected_duplicate: { executed: false, effect: false },
  key_collision: { executed: false, effect: false },
  scope_violation: { executed: false, effect: false },
};

export const SEVERITY: Readonly<Record<FindingClass, Severity>> = {
  cross_store_duplicate: 'critical',
  same_store_duplicate: 'critical',
  absorbed_duplicate: 'warning',
  // Unconfirmed: worth a look, never a critical page.
  suspected_duplicate: 'high',
  key_collision: 'high',
  scope_violation: 'warning',
};

/**
 * Why, within a class: `ttl_expired` / `race` for same-store duplicates, or `store_unknown` when
 * the spans name no store and declare no scope (so every node's executions count in one
 * `<service>/unknown` store) and the executions ran on different nodes — whether they shared a
 * store is not known, so neither race nor expiry is claimed; `cross_tenant_replay` /
 * `shared_key` for key collisions; for suspected duplicates `effect_unknown` (an earlier attempt
 * failed after admission, and whether its effect committed is unknown) or `execution_unseen` (one
 * execution is in the spans, and the spans say another probably ran where its own spans were lost:
 * a node killed before exporting them, see unseen-execution.ts); null where the class says it all.
 */
export type FindingCause =
  | 'ttl_expired'
  | 'race'
  | 'store_unknown'
  | 'cross_tenant_replay'
  | 'shared_key'
  | 'effect_unknown'
  | 'execution_unseen'
  | null;

/**
 * What a suspected duplicate rests on, each one a span on-call can open (unseen-execution.ts):
 *
 * - `send_reset`: a send of the key whose connection was reset with no response and no span of
 *   the tier under it — the request reached a process that died under it; strong when a node of
 *   the tier's service went silent (`node_down`, or a cluster or region failover) at that moment;
 * - `send_cut_off`: a send that got no answer (a timeout, or a 502/504 from a proxy) with no span
 *   of the tier under it, during which a node of the tier's service stopped emitting spans;
 * - `send_lost_behind_proxy`: a proxy's 502/504 answer to a send with no span of the tier under it,
 *   given while a node of the tier's service was silent, to a send that began in the first
 *   `silenceMinMillis` of that silence: the proxy had forwarded it to a node that went away with it;
 * - `unexplained_in_progress`: a store answered `in_progress` (409) while no execution in that
 *   store is in the spans to hold the key: an execution the spans do not show held it;
 * - `arrival_without_decision`: a request of the key reached a node (its SERVER span carries the
 *   key and failed or has no status) that recorded no store decision under it, and the node went
 *   silent as it ended;
 * - `failed_after_admission`: an admitted attempt failed, and nothing says whether its effect
 *   committed (the `effect_unknown` cause).
 */
export type SuspicionEvidenceKind =
  | 'send_reset'
  | 'send_cut_off'
  | 'send_lost_behind_proxy'
  | 'unexplained_in_progress'
  | 'arrival_without_decision'
  | 'failed_after_admission';

export const SUSPICION_EVIDENCE_KINDS: readonly SuspicionEvidenceKind[] = [
  'send_reset',
  'send_cut_off',
  'send_lost_behind_proxy',
  'unexplained_in_progress',
  'arrival_without_decision',
  'failed_after_admission',
];

/** `strong`: the spans leave one likely reading; `moderate`: likely, with another reading open. */
export type SuspicionStrength = 'strong' | 'moderate';

export interface SuspicionEvidence {
  kind: SuspicionEvidenceKind;
  strength: SuspicionStrength;
  /** The span it rests on: a CLIENT send, a decision, a SERVER span. */
  traceId: string;
  spanId: string;
  atUnixMillis: number;
  /** The node the unseen (or unconfirmed) execution probably ran on; '' when the spans cannot say. */
  node: string;
  /** The store it points at (`unexplained_in_progress`, `failed_after_admission`); '' otherwise. */
  store: string;
  /** The routing event it rests on (the node that went silent); null when none. */
  routingEventId: string | null;
}

/** Why a finding is a suspected duplicate: the evidence, and the strongest of it. */
export interface Suspicion {
  strength: SuspicionStrength;
  /** In time order, never empty. */
  evidence: SuspicionEvidence[];
}

export type RetriedBy = 'client' | 'proxy' | 'unknown';

/**
 * What the caller's send before the repeat ended with: `timeout` (no response: the caller gave up
 * waiting), `proxy_error` (a proxy's 502 or 504: the node it had forwarded the request to stopped
 * answering), `reset` (the connection was reset with no response), `error_response` (another 5xx),
 * `unknown` (no failed send of the key's caller shows).
 */
export type RetryAfter = 'timeout' | 'proxy_error' | 'reset' | 'error_response' | 'unknown';
export const RETRY_AFTER: readonly RetryAfter[] = [
  'timeout',
  'proxy_error',
  'reset',
  'error_response',
  'unknown',
];

export interface FindingRouting {
  /** The key's attempts at the finding's tier landed on two or more nodes. */
  affinityBroken: boolean;
  /**
   * The routing event that broke the key's retry path, if any: one where an earlier attempt of the
   * key landed, overlapping the interval from its first attempt to the repeat (evaluate-key.ts).
   */
  event: RoutingEvent | null;
}

/** One per key and class. Times are Unix epoch milliseconds (the API renders RFC 3339). */
export interface Finding {
  id: string;
  key: string;
  class: FindingClass;
  cause: FindingCause;
  severity: Severity;
  /**
   * Why `severity` is below its class's (`SEVERITY`); absent when it is not (and on findings stored
   * before it was recorded).
   */
  severityReason?: SeverityReason;
  /** The dedup tier: the service and operation that executed twice (or whose scope was exceeded). */
  service: string;
  operation: string;
  /** First tenant seen for the key ('' when unknown); all of them in `tenants`. */
  tenant: string;
  tenants: string[];
  /**
   * The dedup stores the key's attempts at the tier consulted, and the nodes they landed on, in the
   * order the key first reached them: at most `maxStoresPerFinding` of each.
   */
  stores: string[];
  nodes: string[];
  /**
   * How many stores and nodes there are, listed or not (`stores.length` when the list is whole).
   * Absent on findings stored before it was recorded, whose lists are whole.
   */
  storesTotal: number;
  nodesTotal: number;
  /**
   * Executions (`miss`) at the finding's tier, less the admitted attempts that failed before their
   * effect; a suspected duplicate counts those whose effect is unknown too, and one whose other
   * execution is unseen (`execution_unseen`) counts the one in the spans: 1.
   */
  executions: number;
  /**
   * `proxy` when two landings of the key came from one send (their SERVER spans name one parent
   * span), whether or not that send's CLIENT span carries the key; `client` when they came from
   * different sends.
   */
  retriedBy: RetriedBy;
  /** From the first execution's start to the second's start; null with fewer than two. */
  gapMillis: number | null;
  /**
   * From the first execution's end to the second's start (negative when they overlapped); null
   * with fewer than two. Absent on findings stored before it was recorded.
   */
  idleMillis: number | null;
  /**
   * How long the caller waited before it gave up: the duration of the CLIENT send of the key that
   * preceded the repeat and timed out (no response, no reset). null when the send before the repeat
   * ended otherwise (`retryAfter`: a proxy's 502 comes when the node dies, not when the caller gives
   * up) or no CLIENT span of the key shows one — a send that timed out often carries no key, since
   * HTTP instrumentation records request headers only once a response arrives. Absent on findings
   * stored before it was recorded.
   */
  callerWaitMillis: number | null;
  /** How the send before the repeat ended. Absent on findings stored before it was recorded. */
  retryAfter?: RetryAfter;
  /**
   * The HTTP method of the requests the finding's tier executed (its first execution's request):
   * with `operation`, the endpoint (`POST /payments`). '' when the spans name none; absent on
   * findings stored before it was recorded.
   */
  method?: HttpMethod | '';
  /**
   * How long the first execution's request ran (its SERVER span); null when there is no earlier
   * execution than the repeat, or its SERVER span was lost (`firstExecutionLost`). Absent on
   * findings stored before it was recorded.
   */
  firstExecutionMillis: number | null;
  /**
   * The first execution's decision was recorded on a child span, and its request's SERVER span is
   * not in the evidence (it died with its node, or was dropped): its duration is unknown. Absent
   * on findings stored before it was recorded, which read it as false.
   */
  firstExecutionLost?: boolean;
  /**
   * The first execution's request span ended at its caller's disconnect, with no response sent
   * (execution-outcome.ts, `ExecutionSpan`): it ran at least `firstExecutionMillis`, its end unseen.
   * Absent on findings stored before it was recorded, which read it as false.
   */
  firstExecutionClipped?: boolean;
  /**
   * `firstExecutionMillis > callerWaitMillis`, or true when the first execution was clipped (it was
   * still running when its caller left); null when the wait or the execution is unknown.
   */
  outlivedCallerWait: boolean | null;
  routing: FindingRouting;
  incidentId: string;
  firstSeenUnixMillis: number;
  /**
   * When the key first did what dedup exists to prevent: the start of the repeat execution (a scope
   * violation: of the first attempt in a second store; a key collision: of the second tenant's
   * first attempt). Its incident opens at its findings' earliest. Absent on findings stored before
   * it was recorded, which read it as `firstSeenUnixMillis`.
   */
  repeatUnixMillis: number;
  lastSeenUnixMillis: number;
  /** Every attempt of the key (client, arrival, server), in time order. */
  attempts: Attempt[];
  /**
   * For a suspected duplicate, what it rests on; null for every other class. Absent on findings
   * stored before it was recorded.
   */
  suspicion: Suspicion | null;
  /**
   * The key reached `maxAttemptsPerKey`: `attempts` are its first ones, those after them were
   * counted and not kept, so the finding is judged on part of the key's traffic (a hot key).
   */
  evidenceCapped: boolean;
}

/** `finding.storesTotal`, or the list's length for a finding stored before it was recorded. */
export function storesTotalOf(finding: Pick<Finding, 'stores' | 'storesTotal'>): number {
  return finding.storesTotal ?? finding.stores.length;
}

/** `finding.nodesTotal`, or the list's length for a finding stored before it was recorded. */
export function nodesTotalOf(finding: Pick<Finding, 'nodes' | 'nodesTotal'>): number {
  return finding.nodesTotal ?? finding.nodes.length;
}

/** `finding.repeatUnixMillis`, or its first attempt for a finding stored before it was recorded. */
export function repeatUnixMillisOf(finding: Finding): number {
  return finding.repeatUnixMillis ?? finding.firstSeenUnixMillis;
}
