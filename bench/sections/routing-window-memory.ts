import { LATENCY_BUCKETS, type NodeActivity } from '@keyscope/attempts';
import { createDetector } from '@keyscope/detector';

/** Seconds of activity per ingest call: what a few hundred payloads of a busy pipeline carry. */
const SECONDS_PER_CALL = 60;
/** Spans per node and second, spread over the latency histogram's buckets as a healthy service's are. */
const SPANS_PER_SECOND = 20;

/**
 * Memory the detector holds per node for its routing window (JS heap plus ArrayBuffer stores):
 * `nodes` nodes of one service, each active every second for `seconds` seconds with a latency
 * histogram per second, as the service's restore and a running pipeline fill it. Measured with
 * `--expose-gc`, after a full collection before and after, divided by the nodes. With `seconds`
 * at the window's two hours, this is what each node sending to keyscope costs it.
 */
export function measureWindowMemoryPerNode(nodes: number, seconds: number): number {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('memory per node needs node --expose-gc');
  gc();
  gc();
  const before = retainedBytes();
  const detector = createDetector();
  const startUnixMillis = Date.UTC(2026, 0, 1);
  for (let from = 0; from < seconds; from += SECONDS_PER_CALL) {
    const activity: NodeActivity[] = [];
    for (let second = from; second < Math.min(seconds, from + SECONDS_PER_CALL); second++) {
      for (let node = 0; node < nodes; node++)
        activity.push(sample(node, startUnixMillis + second * 1000, second));
    }
    detector.ingest({ attempts: [], activity, invalid: { outcome: 0, hit: 0, scope: 0 } });
  }
  gc();
  gc();
  const bytes = (retainedBytes() - before) / nodes;
  // Kept reachable until measured.
  if (detector.stats().keysInMemory !== 0) throw new Error('the window measurement tracked keys');
  return bytes;
}

function sample(node: number, bucketStartUnixMillis: number, second: number): NodeActivity {
  const latency = new Array<number>(LATENCY_BUCKETS).fill(0);
  // Most spans in the 50–250 ms buckets, a few slower, varying from second to second.
  latency[3] = 8 + ((second + node) % 5);
  latency[4] = SPANS_PER_SECOND - latency[3]! - 3;
  latency[5] = 2;
  latency[6] = 1;
  return {
    placement: { service: 'payments', node: `payments-${node}`, cluster: 'c1', region: 'r1', zone: 'z1' },
    bucketStartUnixMillis,
    bucketMillis: 1000,
    spans: SPANS_PER_SECOND,
    errors: second % 97 === 0 ? 1 : 0,
    latency,
  };
}

function retainedBytes(): number {
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}
