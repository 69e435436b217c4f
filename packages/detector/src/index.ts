export { type AttemptLog, createMemoryAttemptLog } from './attempt-log.ts';
export {
  type CompactAttemptLog,
  type CompactAttemptLogStats,
  createCompactAttemptLog,
} from './compact-attempt-log.ts';
export { type DetectorConfig, defaultDetectorConfig } from './config.ts';
export {
  createDetector,
  type Detector,
  type DetectorChanges,
  type DetectorDependencies,
  type DetectorSnapshot,
  type DetectorStats,
} from './detector.ts';
export { DistinctCount } from './distinct-count.ts';
export { evaluateKey, type FindingDraft, tierName } from './evaluate-key.ts';
export { type EvidenceAttempt, type EvidenceGap, evidenceGapsOf } from './evidence-gaps.ts';
export { type ExecutionOutcome, type ExecutionOutcomes, executionOutcomes } from './execution-outcome.ts';
export {
  FINDING_CLASSES,
  type Finding,
  type FindingCause,
  type FindingClass,
  type FindingRouting,
  nodesTotalOf,
  type RetriedBy,
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
} from './finding.ts';
export {
  type Incident,
  IncidentPartView,
  type IncidentStatus,
  incidentOfMembers,
  type ListOverflow,
  nodesTotalOfIncident,
  storesTotalOfIncident,
} from './incidents.ts';
export {
  REPLAY_HEADER_ADVICE,
  type ReplayHeaderVerdict,
  replayHeaderOf,
  type TierReplayHeader,
} from './replay-header.ts';
export { ROUTING_EVENT_TYPES, type RoutingEvent, type RoutingEventType } from './routing-event.ts';
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
} from './scope-report.ts';
export { mayHideExecution, readSend, type SendReading } from './unseen-execution.ts';
