/**
 * Feeds a detector node activity whose buckets lie far apart in time, prints the routing events
 * it infers as JSON, then ticks it (the tick infers them again before it drops activity older than
 * its window). Run as a child process by routing-inference.test.ts, so a
 * tick whose work followed the time range (2^40 buckets) is killed instead of hanging the suite.
 */
import type { NodeActivity } from '@keyscope/attempts';
import { createDetector } from '../../src/index.ts';

function sample(node: string, bucketStartUnixMillis: number): NodeActivity {
  return {
    placement: { service: 'payments', node, cluster: 'c1', region: 'r1', zone: '' },
    bucketStartUnixMillis,
    bucketMillis: 1000,
    spans: 10,
    errors: 0,
  };
}

function seconds(node: string, fromSecond: number, toSecond: number): NodeActivity[] {
  const out: NodeActivity[] = [];
  for (let second = fromSecond; second < toSecond; second++) out.push(sample(node, second * 1000));
  return out;
}

const FAR = 2 ** 40;
const cases: Record<string, NodeActivity[]> = {
  // Node a serves, goes silent for 2^40 s while node b keeps serving at the far end, then returns.
  silentFor2To40Seconds: [
    ...seconds('a', 0, 60),
    ...seconds('b', 0, 60),
    ...seconds('b', FAR, FAR + 60),
    ...seconds('a', FAR + 60, FAR + 120),
    ...seconds('b', FAR + 60, FAR + 120),
  ],
  startsAt0And2To53Millis: [sample('a', 0), sample('b', 0), sample('b', 2 ** 53)],
  startsAt0And1e300Millis: [sample('a', 0), sample('b', 0), sample('b', 1e300)],
};

const events: Record<string, unknown> = {};
for (const [name, activity] of Object.entries(cases)) {
  const detector = createDetector();
  detector.ingest({ attempts: [], activity, invalid: { outcome: 0, hit: 0, scope: 0 } });
  events[name] = detector.routingEvents();
  detector.tick(0);
}
process.stdout.write(JSON.stringify(events));
