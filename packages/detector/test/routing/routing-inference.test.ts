import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { emptyLatency, latencyBucketOf, type NodeActivity } from '@keyscope/attempts';
import { TEST_EPOCH_UNIX_MILLIS } from '@keyscope/attempts/testing';
import { prng } from '@keyscope/otlp/testing';
import { activity } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { type DetectorConfig, defaultDetectorConfig, type RoutingEvent } from '../../src/index.ts';
import { RoutingInference } from '../../src/routing/routing-inference.ts';
import { WholeWindowRoutingInference } from '../support/whole-window-routing-inference.ts';

const SCRIPT = fileURLToPath(new URL('../support/far-apart-activity.ts', import.meta.url));
const REPOSITORY = fileURLToPath(new URL('../../../..', import.meta.url));

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
  it("judges a bucket's latency again only when activity within its ten-second window arrives", () => {
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
    // A late sample for an old bucket has the ten buckets whose window holds it judged again on
    // every node, and nothing else.
    inference.record(
      activity({ node: 'b', fromSecond: 10, toSecond: 11, spans: 1, latency: latencyOf(1, 300) }),
    );
    expect(spikes()).toHaveLength(1);
    expect(inference.latencyJudgements - afterFirst).toBe((1 + 10) * nodes.length);
  });
});

describe('the routing clock when traffic stops', () => {
  const at = (second: number) => TEST_EPOCH_UNIX_MILLIS + second * 1000;

  it('closes seconds past the newest activity while none arrives, infers nothing from them, and counts activity that arrives for them after', () => {
    const inference = new RoutingInference(defaultDetectorConfig());
    // Node c stops at second 30 while a and b serve on; at second 60 all of payments stops.
    inference.record([
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'b', fromSecond: 0, toSecond: 60 }),
      ...activity({ node: 'c', fromSecond: 0, toSecond: 30 }),
    ]);
    for (let second = 60; second <= 70; second++) inference.advanceClock(at(second));
    const down = {
      type: 'node_down',
      node: 'c',
      startUnixMillis: at(30),
      endUnixMillis: at(60),
      ended: false,
    };
    expect(inference.closedUnixMillisNow()).toBe(at(60));
    const before = inference.all();
    expect(before).toMatchObject([down]);

    for (let second = 71; second <= 660; second++) inference.advanceClock(at(second));
    // The lateness behind the clock, ten minutes past the newest activity ...
    expect(inference.closedUnixMillisNow()).toBe(at(650));
    // ... with the events as they were: c's silence ends, for now, where the others stopped serving,
    // and a and b, silent with the whole service, are not down.
    expect(inference.all()).toEqual(before);

    // a and b serve again from second 600, late for seconds the clock closed: counted at once.
    inference.record([
      ...activity({ node: 'a', fromSecond: 600, toSecond: 620 }),
      ...activity({ node: 'b', fromSecond: 600, toSecond: 620 }),
    ]);
    expect(inference.all()).toMatchObject([{ ...down, endUnixMillis: at(620) }]);
  });

  it('moves past activity that arrived later than the lateness only once nothing newer came for the lateness as well', () => {
    const inference = new RoutingInference(defaultDetectorConfig());
    // A minute of traffic read an hour after it ran, the last of it when the clock is at 3,660 s.
    inference.record(['a', 'b'].flatMap((node) => activity({ node, fromSecond: 0, toSecond: 60 })));
    for (let second = 3_660; second <= 3_670; second++) {
      inference.advanceClock(at(second));
      // A backlog's pause between batches: nothing past the activity read.
      expect(inference.closedUnixMillisNow()).toBe(at(60));
    }
    inference.advanceClock(at(3_676));
    expect(inference.closedUnixMillisNow()).toBe(at(66));
  });
});

/** One call made to both inferences, as the detector makes them. */
type Step =
  | { record: NodeActivity[] }
  | { advanceClockUnixMillis: number }
  | { closeAll: true }
  | { prune: true }
  | { all: true };

interface RandomStream {
  config: DetectorConfig;
  services: string[];
  steps: Step[];
}

/**
 * A random activity stream and the calls that feed it: 2–5 nodes per service over two clusters
 * and regions; nodes that go silent, alone or a whole cluster at once, fail, slow down, join late;
 * service-wide lulls and slowdowns; stretches with no activity at all (up to 2^30 buckets); buckets
 * split over several samples, delivered mostly in order, some within the allowed lateness, some
 * far beyond it; a few with samples of another bucket size; clock ticks (some in quiet stretches,
 * with nothing arriving), pruning and the end of input in between. Half the streams count in minute buckets, so that the two-hour window holds
 * 120 of them and pruning eats into what was found; thresholds vary per stream.
 */
function randomStream(seed: number): RandomStream {
  const random = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const chance = (p: number) => random() < p;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const bucketMillis = chance(0.5) ? 60_000 : 1000;
  const inBuckets = (lo: number, hi: number) => Math.round((lo + random() * (hi - lo)) * bucketMillis);
  const lateness = int(0, 4);
  // A few streams mix in samples counted in buckets twice as long (a service restarted with
  // another bucket size on activity it had stored): every index then means another time.
  const mixedBuckets = chance(0.1);
  const config: DetectorConfig = {
    ...defaultDetectorConfig(),
    allowedLatenessMillis: lateness * bucketMillis,
    silenceMinMillis: inBuckets(0.5, 6),
    silenceMinExpectedSpans: int(1, 40),
    errorSpikeMinMillis: inBuckets(0.5, 4),
    errorSpikeMinSpans: int(1, 6),
    latencySpikeMinMillis: inBuckets(0.5, 5),
    latencySpikeMinSpans: int(1, 6),
  };
  const services = ['payments', 'ledger'].slice(0, int(1, 2));
  const nodes = services.flatMap((service) =>
    Array.from({ length: int(2, 5) }, (_, n) => ({
      placement: {
        service,
        node: `${service}-${n}`,
        cluster: pick(['c1', 'c2', 'c2', '']),
        region: pick(['r1', 'r2']),
        zone: '',
      },
      joinsAt: chance(0.3) ? int(1, 40) : 0,
      downUntil: 0,
      failingUntil: 0,
      slowUntil: 0,
    })),
  );
  const outages = new Map<string, { until: number; cluster?: string; slow?: boolean }>();
  const firstIndex = Math.floor(1.7e12 / bucketMillis);
  const arrivals: { sample: NodeActivity; arrival: number }[] = [];
  const length = bucketMillis === 60_000 ? int(150, 320) : int(60, 200);
  let t = 0;
  for (let step = 0; step < length; step++, t++) {
    if (chance(0.01)) t += chance(0.2) ? 2 ** 30 : int(10, 200);
    for (const service of services) {
      const outage = outages.get(service);
      if (outage !== undefined && outage.until <= t) outages.delete(service);
      if (outages.has(service) || !chance(0.03)) continue;
      const kind = pick(['cluster', 'cluster', 'lull', 'slow'] as const);
      const until = t + int(1, 12);
      if (kind === 'cluster') outages.set(service, { until, cluster: pick(['c1', 'c2']) });
      else outages.set(service, { until, slow: kind === 'slow' });
    }
    for (const node of nodes) {
      if (t < node.joinsAt) continue;
      if (chance(0.03)) node.downUntil = t + int(1, 12);
      if (chance(0.03)) node.failingUntil = t + int(1, 8);
      if (chance(0.03)) node.slowUntil = t + int(1, 12);
      const outage = outages.get(node.placement.service);
      const cut =
        outage !== undefined &&
        (outage.cluster === undefined ? !outage.slow : outage.cluster === node.placement.cluster);
      if (t < node.downUntil || cut) continue;
      const spans = chance(0.02) ? 0 : int(3, 30);
      const errors =
        t < node.failingUntil ? int(Math.ceil(spans / 2), spans) : chance(0.1) ? int(0, spans >> 2) : 0;
      const slow = t < node.slowUntil || outage?.slow === true;
      const millis = slow ? int(1_500, 3_000) : int(100, 400);
      const parts = chance(0.2) ? 2 : 1;
      for (let part = 0; part < parts; part++) {
        const share = (count: number) => (part === 0 ? Math.ceil(count / parts) : Math.floor(count / parts));
        const sample: NodeActivity = {
          placement: node.placement,
          bucketStartUnixMillis: (firstIndex + t) * bucketMillis,
          bucketMillis: mixedBuckets && chance(0.05) ? 2 * bucketMillis : bucketMillis,
          spans: share(spans),
          errors: share(errors),
        };
        if (chance(0.9)) sample.latency = latencyOf(share(spans), millis);
        const delay = chance(0.75)
          ? 0
          : chance(0.6)
            ? int(0, lateness + 1)
            : chance(0.8)
              ? int(0, 40)
              : int(0, 400);
        arrivals.push({ sample, arrival: t + delay + random() });
      }
    }
  }
  arrivals.sort((a, b) => a.arrival - b.arrival);
  const steps: Step[] = [];
  for (let at = 0; at < arrivals.length; ) {
    const batch = arrivals.slice(at, (at += int(1, 10)));
    steps.push({ record: batch.map(({ sample }) => sample) });
    const arrival = Math.floor(batch[batch.length - 1]!.arrival);
    if (chance(0.6))
      steps.push({ advanceClockUnixMillis: (firstIndex + arrival + int(0, lateness + 2)) * bucketMillis });
    if (chance(0.05)) {
      // A quiet stretch: the clock moves on with nothing arriving, closing seconds past the newest
      // activity, and what arrives next lands in them.
      let clock = firstIndex + arrival;
      for (let quiet = int(1, 4); quiet > 0; quiet--)
        steps.push({ advanceClockUnixMillis: (clock += int(1, 20)) * bucketMillis });
    }
    if (chance(0.5)) steps.push({ prune: true });
    if (chance(0.01)) steps.push({ closeAll: true });
    if (chance(0.5)) steps.push({ all: true });
  }
  steps.push({ closeAll: true }, { all: true }, { prune: true }, { all: true });
  return { config, services, steps };
}

describe('incremental routing inference', () => {
  it('infers exactly the events of reading the whole window again, after every step of 100 random activity streams', () => {
    // Streams each event type appeared in; streams where late activity or pruning withdrew an event,
    // where pruning went past one (it is then frozen), and where activity arrived for seconds the
    // clock had closed past the newest activity.
    const streamsWith = new Map<string, number>();
    for (let seed = 1; seed <= 100; seed++) {
      const stream = randomStream(seed);
      const incremental = new RoutingInference(stream.config);
      const whole = new WholeWindowRoutingInference(stream.config);
      const kinds = new Set<string>();
      let previous = new Set<string>();
      let newestUnixMillis = Number.NEGATIVE_INFINITY;
      stream.steps.forEach((step, i) => {
        const where = `seed ${seed}, step ${i}`;
        if ('record' in step) {
          const closed = incremental.closedUnixMillisNow();
          for (const sample of step.record) {
            // Activity for a second the quiet clock closed past the newest activity.
            if (sample.bucketStartUnixMillis >= newestUnixMillis && sample.bucketStartUnixMillis < closed)
              kinds.add('after quiet');
          }
          for (const sample of step.record)
            newestUnixMillis = Math.max(newestUnixMillis, sample.bucketStartUnixMillis + sample.bucketMillis);
          incremental.record(step.record);
          whole.record(step.record);
        } else if ('advanceClockUnixMillis' in step) {
          incremental.advanceClock(step.advanceClockUnixMillis);
          whole.advanceClock(step.advanceClockUnixMillis);
        } else if ('closeAll' in step) {
          incremental.closeAll();
          whole.closeAll();
        } else if ('prune' in step) {
          incremental.prune();
          whole.prune();
        } else {
          const expected = whole.all();
          expect(incremental.all(), where).toEqual(expected);
          const ids = new Set(expected.map((event) => event.id));
          for (const id of previous) if (!ids.has(id)) kinds.add('withdrawn');
          previous = ids;
          for (const event of expected) {
            kinds.add(event.type);
            if (event.endUnixMillis < newestUnixMillis - 2 * 60 * 60 * 1000) kinds.add('frozen');
          }
        }
        for (const service of stream.services)
          expect(incremental.eventsOf(service), `${where}, ${service}`).toEqual(whole.eventsOf(service));
        expect(incremental.closedUnixMillisNow(), where).toBe(whole.closedUnixMillisNow());
      });
      for (const kind of kinds) streamsWith.set(kind, (streamsWith.get(kind) ?? 0) + 1);
    }
    for (const kind of ['node_down', 'error_spike', 'latency_spike', 'cluster_failover', 'region_failover'])
      expect(streamsWith.get(kind) ?? 0, kind).toBeGreaterThanOrEqual(20);
    expect(streamsWith.get('withdrawn') ?? 0).toBeGreaterThanOrEqual(20);
    expect(streamsWith.get('frozen') ?? 0).toBeGreaterThanOrEqual(20);
    expect(streamsWith.get('after quiet') ?? 0).toBeGreaterThanOrEqual(20);
    // A hundred streams, each read whole again after every step: ~15 s on an idle core.
  }, 180_000);
});

describe('the cost of routing inference as its window fills', () => {
  it('reads the same few buckets per closed second with 3 hours of activity as with 10 minutes', () => {
    const inference = new RoutingInference(defaultDetectorConfig());
    const nodes = ['a', 'b', 'c'];
    // Every 10 minutes node a goes silent for 20 s, node b fails for 10 s, node c slows for 15 s;
    // every minute one sample arrives 15 s late, past the allowed lateness.
    const sampleOf = (node: string, at: number): NodeActivity[] => {
      const phase = at % 600;
      if (node === 'a' && phase >= 100 && phase < 120) return [];
      const failing = node === 'b' && phase >= 300 && phase < 310;
      const slow = node === 'c' && phase >= 450 && phase < 465;
      return activity({
        node,
        fromSecond: at,
        toSecond: at + 1,
        spans: 20,
        errors: failing ? 15 : 0,
        latency: latencyOf(20, slow ? 2_400 : 300),
      });
    };
    const readsPerSecond: number[] = [];
    for (let at = 0; at < 3 * 3600; at++) {
      const before = inference.bucketReads;
      inference.record(nodes.flatMap((node) => sampleOf(node, at)));
      if (at % 60 === 59) inference.record(sampleOf('b', at - 15));
      inference.advanceClock(TEST_EPOCH_UNIX_MILLIS + (at + 1) * 1000);
      inference.all();
      inference.prune();
      readsPerSecond.push(inference.bucketReads - before);
    }
    const types = new Set(inference.all().map((event) => event.type));
    expect([...types].sort()).toEqual(['error_spike', 'latency_spike', 'node_down']);
    const mean = (from: number, to: number) =>
      readsPerSecond.slice(from, to).reduce((sum, reads) => sum + reads, 0) / (to - from);
    // With the window a twelfth full, and full for an hour (pruning every second): the same reads,
    // a few per node, where reading the whole window again would read all of its 7,200 seconds;
    // pruning a second adds the latency verdicts whose ten-second window it cut, nine per node.
    const early = mean(600, 1200);
    expect(mean(3 * 3600 - 600, 3 * 3600)).toBeLessThanOrEqual(1.25 * early + 10 * nodes.length);
    expect(early).toBeLessThanOrEqual(10 * nodes.length);
    // The most a second costs is a late sample landing in a brownout, whose run is read again.
    expect(Math.max(...readsPerSecond.slice(600))).toBeLessThanOrEqual(10 * early);
  });
});
