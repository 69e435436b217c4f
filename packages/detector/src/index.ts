export { type DetectorConfig, defaultDetectorConfig } from './config.ts';
export { DistinctCount } from './coverage/distinct-count.ts';
export {
  REPLAY_HEADER_ADVICE,
  type ReplayHeaderVerdict,
  replayHeaderOf,
  type TierReplayHeader,
} from './coverage/replay-header.ts';
export {
  COVERAGE_COUNTS,
  covers,
  INFERRED_REPEATS,
  INFERRED_REPLAYS,
  type MappedScope,
  OVERFLOW_TIER,
  type ScopeReportOverflow,
  type ScopeReportPage,
  type ScopeReportRow,
  type ScopeReportState,
  type ScopeTierState,
  type SpreadLevel,
  spreadOf,
  type TierCoverage,
} from './coverage/scope-report.ts';
export {
  createDetector,
  type Detector,
  type DetectorChanges,
  type DetectorDependencies,
  type DetectorSnapshot,
  type DetectorStats,
  type TickOptions,
} from './detector.ts';
export {
  adviceFactsOf,
  type IncidentFacts,
  mergeIncidentFacts,
} from './incidents/incident-facts.ts';
export {
  describeIncident,
  type Incident,
  IncidentPartView,
  type IncidentStatus,
  incidentOfMembers,
  type ListOverflow,
  nodesTotalOfIncident,
  storesTotalOfIncident,
  tierLabel,
} from './incidents/incidents.ts';
export { type AttemptLog, createMemoryAttemptLog } from './memory/attempt-log.ts';
export {
  type CompactAttemptLog,
  type CompactAttemptLogStats,
  createCompactAttemptLog,
} from './memory/compact-attempt-log.ts';
export { ROUTING_EVENT_TYPES, type RoutingEvent, type RoutingEventType } from './routing/routing-event.ts';
export {
  ADVICE_SENTENCES,
  type AdviceRule,
  type AdviceSentence,
  adviceSentences,
} from './rules/advice.ts';
export { endpointOf, isRouteLike, requestOf } from './rules/endpoint.ts';
export { evaluateKey, type FindingDraft } from './rules/evaluate-key.ts';
export { type EvidenceAttempt, type EvidenceGap, evidenceGapsOf } from './rules/evidence-gaps.ts';
export {
  type ExecutionOutcome,
  type ExecutionOutcomes,
  executionOutcomes,
} from './rules/execution-outcome.ts';
export {
  FINDING_CLASSES,
  type Finding,
  type FindingCause,
  type FindingClass,
  type FindingRouting,
  nodesTotalOf,
  RAN_TWICE,
  RETRY_AFTER,
  type RetriedBy,
  type RetryAfter,
  repeatUnixMillisOf,
  SEVERITY,
  type Severity,
  type SeverityReason,
  SUSPICION_EVIDENCE_KINDS,
  type Suspicion,
  type SuspicionEvidence,
  type SuspicionEvidenceKind,
  type SuspicionStrength,
  storesTotalOf,
} from './rules/finding.ts';
export { mayHideExecution, readSend, type SendReading } from './rules/unseen-execution.ts';
export { tierName } from './tier-name.ts';
