import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { emptyLatency, latencyBucketOf } from '@keyscope/attempts';
import { activity } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { defaultDetectorConfig, type RoutingEvent } from '../src/index.ts';
import { RoutingInference } from '../src/routing-inference.ts';

const SCRIPT = fileURLToPath(new URL('./support/far-apart-activity.ts', import.meta.url));
const REPOSITORY = fileURLToPath(new URL('../../..', import.meta.url));

describe('routing inference over far-apart timestamps', () => {
  // A hang guard, not a timing: inference that walked every bucket of a 2^40-bucket gap would run
  // for hours, so the child is killed and the test fails.
  it('infers events from buckets 2^40 apart, and from starts of 0 next to 2^53 or 1e300 ms, in bounded work', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', SCRIPT], {
      cwd: REPOSITORY,
      timeout: 60_000,
    });
    const events = JSON.parse(stdout) as Record<string, RoutingEvent[]>;

    const down = events.silentFor2To40Seconds!;
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({
      type: 'node_down',
      node: 'a',
      startUnixMillis: 60_000,
      endUnixMillis: (2 ** 40 + 60) * 1000,
      ended: true,
    });
    // One bucket of node a before a silence is too little baseline to expect 20 spans of it.
    expect(events.startsAt0And2To53Millis).toEqual([]);
    expect(events.startsAt0And1e300Millis).toEqual([]);
  }, 90_000);
});

/** A duration histogram of `spans` spans of `millis` each. */
function latencyOf(spans: number, millis: number): number[] {
  const counts = emptyLatency();
  counts[latencyBucketOf(millis)] = spans;
  return counts;
}

describe('latency spike inference as activity accumulates', () => {
  it("judges a bucket's latency again only when activity for that bucket arrives", () => {
    const inference = new RoutingInference(defaultDetectorConfig());
    const nodes = ['a', 'b', 'c'];
    const second = (at: number) =>
      nodes.flatMap((node) =>
        activity({
          node,
          fromSecond: at,
          toSecond: at + 1,
          spans: 20,
          latency: latencyOf(20, node === 'a' && at >= 300 && at < 330 ? 2_400 : 300),
        }),
      );
    for (let at = 0; at < 600; at++) inference.record(second(at));
    inference.closeAll();
    const spikes = () => inference.all().filter((event) => event.type === 'latency_spike');
    expect(spikes().map((event) => event.node)).toEqual(['a']);
    const afterFirst = inference.latencyJudgements;
    expect(afterFirst).toBe(600 * nodes.length);
    // One more second, inferred again: its buckets are judged, not the 1,800 before them.
    inference.record(second(600));
    inference.closeAll();
    expect(spikes()).toHaveLength(1);
    expect(inference.latencyJudgements - afterFirst).toBe(nodes.length);
    // A late sample for an old bucket has that bucket judged again on every node, and nothing else.
    inference.record(
      activity({ node: 'b', fromSecond: 10, toSecond: 11, spans: 1, latency: latencyOf(1, 300) }),
    );
    expect(spikes()).toHaveLength(1);
    expect(inference.latencyJudgements - afterFirst).toBe(2 * nodes.length);
  });
});
