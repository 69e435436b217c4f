import {
  createDetector,
  type DetectorChanges,
  defaultDetectorConfig,
  type RoutingEvent,
} from '@keyscope/detector';
import { activity, server } from '@keyscope/testkit';

/** What the detector of one attempts partition reports for one key executed in two node stores. */
export function duplicateOf(key: string): DetectorChanges {
  const detector = createDetector(defaultDetectorConfig());
  return detector.ingest({
    attempts: [
      server({ key, node: 'a', store: 'payments/node:a', at: 0 }),
      server({ key, node: 'b', store: 'payments/node:b', at: 3 }),
    ],
    activity: [],
    invalid: { outcome: 0, hit: 0, scope: 0 },
  });
}

/** The routing events a detector infers when node b is silent from second 10 until `until`. */
export function nodeDownUntil(until: number): RoutingEvent[] {
  const detector = createDetector(defaultDetectorConfig());
  detector.ingest({
    attempts: [],
    activity: [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 40 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 10 }),
      ...activity({ node: 'b', fromSecond: until, toSecond: 40 }),
    ],
    invalid: { outcome: 0, hit: 0, scope: 0 },
  });
  return detector.flush().routingEvents ?? [];
}
