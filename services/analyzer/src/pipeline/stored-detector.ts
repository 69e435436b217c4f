import {
  createDetector,
  type Detector,
  type DetectorConfig,
  type ScopeReportState,
} from '@keyscope/detector';
import type { KeyscopeStore } from '@keyscope/store';
/** Activity a restarted detector reloads: enough to re-infer any failover still being correlated. */
export const ACTIVITY_RESTORE_MILLIS = 2 * 60 * 60 * 1000;

/**
 * Keys judged again per step after a routing event changed, each step a transaction and a turn of
 * the event loop of its own (serve's pipeline, each Kafka detect partition): a key is ~0.2 ms, its
 * attempts read from SQLite, so a step is ~2 ms (24 ms the longest of 289 steps at half load),
 * where a whole incident of 1,260–1,680 keys in one tick held the event loop 270–460 ms.
 */
export const REGROUP_STEP_KEYS = 16;

/**
 * A detector over `store`'s attempt log, carrying on from what the store committed: recent
 * findings (by event time, not the wall clock: traces replayed from an archive are as old as they
 * are), recent node activity, and the scope report. The embedded pipeline and each Kafka detect
 * partition start from one after a restart or a failed transaction.
 */
export function restoreDetector(store: KeyscopeStore, config: DetectorConfig): Detector {
  const detector = createDetector(config, { attemptLog: store.attemptLog });
  const latest = store.findings.latestUnixMillis();
  detector.restore({
    findings: latest === undefined ? [] : store.findings.recent(latest - config.retryHorizonMillis),
    activity: store.recentActivity(ACTIVITY_RESTORE_MILLIS),
    scopeState: store.scopeTiers.load(),
  });
  return detector;
}

/**
 * Persists the tiers of the detector's scope report that changed since it was last saved (or
 * restored), inside the caller's transaction, and returns them. A transaction that fails rebuilds the detector from
 * the store, so what it had taken as saved is read back as it was.
 */
export function saveScopeState(store: KeyscopeStore, detector: Detector): ScopeReportState {
  const changes = detector.scopeChanges();
  store.scopeTiers.save(changes);
  return changes;
}
