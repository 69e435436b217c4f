import { emptyLatency, latencyBucketOf, type NodeActivity } from '@keyscope/attempts';
import { prng } from '@keyscope/otlp/testing';
import { activity, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { defaultDetectorConfig } from '../../src/index.ts';
import { RoutingInference } from '../../src/routing/routing-inference.ts';
import { slowerThan, slowShareOf } from '../../src/routing/slow-share.ts';

/** A histogram of the given span durations. */
function histogramOf(durations: readonly number[]): number[] {
  const counts = emptyLatency();
  for (const millis of durations) counts[latencyBucketOf(millis)]!++;
  return counts;
}

describe('slowShareOf', () => {
  it('reads both sides at the lowest bound at most a fifth of the others reached', () => {
    // Others: 8 spans under 0.5 s, 2 of 0.5–1 s (20%): 0.5 s is the bound they rarely reach.
    const others = histogramOf([100, 200, 300, 300, 300, 300, 400, 450, 600, 800]);
    const own = histogramOf([300, 2_100, 2_200, 2_000]);
    expect(slowShareOf(own, others)).toEqual({
      boundMillis: 500,
      spans: 3,
      share: 0.75,
      otherShare: 0.2,
      otherShareBound: 3 / 11,
    });
  });

  it('reads none of ten others past the bound as one in eleven: three slow spans of ten are twice that, one is not', () => {
    const others = histogramOf(Array.from({ length: 10 }, () => 300));
    expect(
      slowerThan(histogramOf([600, 600, 600, 300, 300, 300, 300, 300, 300, 300]), others, {
        ratio: 2,
        minSpans: 1,
        sigmas: 0,
      }),
    ).toBe(true);
    expect(
      slowerThan(histogramOf([600, 300, 300, 300, 300, 300, 300, 300, 300, 300]), others, {
        ratio: 2,
        minSpans: 1,
        sigmas: 0,
      }),
    ).toBe(false);
  });
});

/**
 * Seconds of a service of three nodes at ~10 requests/s each (Poisson), service time lognormal with
 * median 0.3 s and σ 0.77, as the lab measures it. `slowed` adds `extraMillis` to a node's requests
 * in its seconds, and its callers give up after `timeoutMillis`: the SERVER span ends then, a
 * little later for the socket to close, whatever the handler still does.
 */
function traffic(options: {
  seed: number;
  seconds: number;
  slowed?: { nodes: readonly string[]; fromSecond: number; toSecond: number };
}): NodeActivity[] {
  const random = prng(options.seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const poisson = (mean: number) => {
    let count = 0;
    for (let p = random(); p > Math.exp(-mean); p *= random()) count++;
    return count;
  };
  const out: NodeActivity[] = [];
  for (let second = 0; second < options.seconds; second++) {
    for (const node of ['a', 'b', 'c']) {
      const slowed =
        options.slowed?.nodes.includes(node) &&
        second >= options.slowed.fromSecond &&
        second < options.slowed.toSecond;
      const durations = Array.from({ length: poisson(10) }, () => {
        const millis = 300 * Math.exp(0.77 * normal()) + (slowed ? 2_500 : 0);
        return Math.min(millis, 2_000 + 300 * random());
      });
      if (durations.length === 0) continue;
      out.push(
        ...activity({
          node,
          fromSecond: second,
          toSecond: second + 1,
          spans: durations.length,
          latency: histogramOf(durations),
        }),
      );
    }
  }
  return out;
}

function latencySpikes(activity: readonly NodeActivity[]) {
  const inference = new RoutingInference(defaultDetectorConfig());
  inference.record(activity);
  inference.closeAll();
  return inference.all().filter((event) => event.type === 'latency_spike');
}

describe('latency spikes on lognormal latency clipped at the callers’ timeout', () => {
  it('infers none on healthy nodes over two hours of seconds, for several seeds', () => {
    for (const seed of [1, 2, 3, 4]) expect(latencySpikes(traffic({ seed, seconds: 7_200 }))).toEqual([]);
  });

  it('infers one on the node 2.5 s slower for 20 s past its callers’ 2 s timeout, over those seconds', () => {
    for (const seed of [1, 2, 3]) {
      const spikes = latencySpikes(
        traffic({ seed, seconds: 120, slowed: { nodes: ['b'], fromSecond: 60, toSecond: 80 } }),
      );
      expect(spikes.map((event) => event.node)).toEqual(['b']);
      const [spike] = spikes;
      expect(spike!.startUnixMillis - TEST_EPOCH_UNIX_MILLIS).toBeGreaterThanOrEqual(59_000);
      expect(spike!.startUnixMillis - TEST_EPOCH_UNIX_MILLIS).toBeLessThanOrEqual(62_000);
      expect(spike!.endUnixMillis - TEST_EPOCH_UNIX_MILLIS).toBeGreaterThanOrEqual(78_000);
      expect(spike!.endUnixMillis - TEST_EPOCH_UNIX_MILLIS).toBeLessThanOrEqual(82_000);
      expect(spike!.description).toMatch(
        /^\d+% of payments server spans on node b took 1 s or more in .* UTC \(\d+ s\), against \d+% on its other nodes and \d+% in its 30 s before$/,
      );
    }
  });

  it('infers none when every node of the service slowed together', () => {
    for (const seed of [1, 2, 3]) {
      const slowed = { nodes: ['a', 'b', 'c'], fromSecond: 60, toSecond: 80 };
      expect(latencySpikes(traffic({ seed, seconds: 120, slowed }))).toEqual([]);
    }
  });
});
