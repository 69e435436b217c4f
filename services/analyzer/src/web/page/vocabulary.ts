import type { Outcome } from '@keyscope/attempts';
import type {
  FindingCause,
  RetriedBy,
  RoutingEventType,
  Severity,
  SuspicionEvidenceKind,
} from '@keyscope/detector';
import type { FindingClass } from './api-types.ts';

/*
 * The words the page uses for the API's closed lists. Records over the API's union types, so a new
 * class or outcome fails the type check until it has a label here.
 */

export const CLASS_LABELS: Readonly<Record<FindingClass, string>> = {
  cross_store_duplicate: 'Executed in two stores',
  same_store_duplicate: 'Executed twice in one store',
  absorbed_duplicate: 'Repeat absorbed downstream',
  suspected_duplicate: 'Ran again after a failed attempt',
  key_collision: 'Key shared by tenants',
  scope_violation: 'Retries outran key scope',
};

export const FINDING_CLASSES = Object.keys(CLASS_LABELS) as FindingClass[];

export const CAUSE_LABELS: Readonly<Record<NonNullable<FindingCause>, string>> = {
  ttl_expired: 'the key expired before the retry',
  race: 'attempts overlapped (no in-flight lock)',
  store_unknown: 'the spans name no dedup store and the executions ran on different nodes',
  cross_tenant_replay: "a tenant was served another tenant's replay",
  shared_key: 'tenants generated the same key',
  effect_unknown: 'the first attempt failed after admission; whether its effect committed is unknown',
  execution_unseen: 'one execution is in the traces; another probably ran on a node whose spans were lost',
};

export const EVIDENCE_LABELS: Readonly<Record<SuspicionEvidenceKind, string>> = {
  send_reset: 'a send was reset with no server span under it',
  send_cut_off: 'a send got no answer with no server span under it',
  send_lost_behind_proxy: 'a proxy answered 502/504 with no server span under it as a node went silent',
  unexplained_in_progress: 'a store answered in progress for a lock no visible execution held',
  arrival_without_decision: 'a request reached a node that died before recording its decision',
  failed_after_admission: 'an admitted attempt failed, its effect unknown',
};

export const OUTCOME_LABELS: Readonly<Record<Outcome, string>> = {
  miss: 'executed (miss)',
  hit: 'replayed (hit)',
  in_progress: 'in progress (409)',
  mismatch: 'payload mismatch (422)',
  error: 'store error',
};

/** Severity shown as a word and a shape as well as a colour. */
export const SEVERITY_MARKS: Readonly<Record<Severity, { glyph: string; label: string }>> = {
  critical: { glyph: '◆', label: 'Critical' },
  high: { glyph: '▲', label: 'High' },
  warning: { glyph: '●', label: 'Warning' },
};

export const ROUTING_LABELS: Readonly<Record<RoutingEventType, string>> = {
  node_down: 'Node down',
  error_spike: 'Error spike',
  latency_spike: 'Latency spike',
  cluster_failover: 'Cluster failover',
  region_failover: 'Region failover',
};

export const RETRIED_BY_LABELS: Readonly<Record<RetriedBy, string>> = {
  client: 'the client',
  proxy: 'a proxy or load balancer',
  unknown: 'unknown',
};
