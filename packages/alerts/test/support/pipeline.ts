import type { Attempt, NodeActivity } from '@keyscope/attempts';
import { createDetector, type DetectorChanges, type Finding, type Incident } from '@keyscope/detector';
import type { KeyscopeStore } from '@keyscope/store';
import { activity, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import type { Alerter } from '../../src/index.ts';

/**
 * What the service's pipeline does with a batch, in miniature: the detector's changes, the store
 * write and the alerter's enqueueing in one transaction.
 */
export interface Pipeline {
  ingest(attempts: Attempt[], nodeActivity?: NodeActivity[]): DetectorChanges;
  /** Detector time moves to `secondsAfterEpoch` (routing inference, quiet incidents resolve). */
  tick(secondsAfterEpoch: number): DetectorChanges;
}

export function createPipeline(store: KeyscopeStore, alerter: Alerter, restore: Finding[] = []): Pipeline {
  const detector = createDetector(undefined, { attemptLog: store.attemptLog });
  detector.restore({ findings: restore });
  const commit = (work: () => DetectorChanges): DetectorChanges =>
    store.transaction(() => {
      const changes = work();
      alerter.incidentsRetracted(changes.retractedIncidentIds);
      store.applyChanges(changes);
      alerter.incidentsChanged(changes.incidents);
      return changes;
    });
  return {
    ingest: (attempts, nodeActivity = []) =>
      commit(() =>
        detector.ingest({
          attempts,
          activity: nodeActivity,
          invalid: { outcome: 0, hit: 0, scope: 0 },
        }),
      ),
    tick: (secondsAfterEpoch) =>
      commit(() => detector.tick(TEST_EPOCH_UNIX_MILLIS + secondsAfterEpoch * 1000)),
  };
}

/** One key executed in two node stores (A on node a, B on node b): a critical cross-store duplicate. */
export function duplicate(key: string, atSecond = 0): Attempt[] {
  return [
    server({ key, node: 'a', store: 'A', at: atSecond }),
    server({ key, node: 'b', store: 'B', at: atSecond + 2 }),
  ];
}

/** One key's retry reached a second store that answered with a hit: a (warning) scope violation. */
export function scopeViolation(key: string, atSecond = 0): Attempt[] {
  return [
    server({ key, node: 'a', store: 'A', at: atSecond }),
    server({ key, node: 'b', store: 'B', at: atSecond + 2, outcome: 'hit' }),
  ];
}

/** Node a stops serving at second 19 while b and c go on: the detector infers a node_down. */
export function nodeADown(): NodeActivity[] {
  return [
    ...activity({ node: 'a', fromSecond: 0, toSecond: 19 }),
    ...activity({ node: 'b', fromSecond: 0, toSecond: 60 }),
    ...activity({ node: 'c', fromSecond: 0, toSecond: 60 }),
  ];
}

/** Far enough after the test epoch for every incident above to be quiet past its period. */
export const QUIET_SECOND = 3 * 60 * 60;

/** The incident the detector makes of `attempts` (exactly one expected); `resolved` ticks past its quiet period. */
export function incidentOf(attempts: Attempt[], options: { resolved?: boolean } = {}): Incident {
  const detector = createDetector();
  let incidents = detector.ingest({
    attempts,
    activity: [],
    invalid: { outcome: 0, hit: 0, scope: 0 },
  }).incidents;
  if (options.resolved === true)
    incidents = detector.tick(TEST_EPOCH_UNIX_MILLIS + QUIET_SECOND * 1000).incidents;
  if (incidents.length !== 1) throw new Error(`expected one incident, the detector made ${incidents.length}`);
  return incidents[0]!;
}
