import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Attempt, NodeActivity } from '@keyscope/attempts';
import { defaultDetectorConfig } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import { activity, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import type { AttemptsRecord } from '../../src/kafka/attempt-records.ts';
import { PartitionDetector } from '../../src/kafka/partition-detector.ts';

const dir = mkdtempSync(join(tmpdir(), 'keyscope-partition-'));
const open: PartitionDetector[] = [];
afterEach(() => {
  for (const detector of open.splice(0)) detector.close();
});

let files = 0;
function partitionDetector(path = join(dir, `p-${++files}.db`)): PartitionDetector {
  const detector = new PartitionDetector({
    path,
    partition: 3,
    detectorConfig: defaultDetectorConfig(),
    retentionMillis: 30 * 24 * 60 * 60 * 1000,
    now: () => TEST_EPOCH_UNIX_MILLIS + 60_000,
  });
  open.push(detector);
  return detector;
}

const attempt = (offset: number, value: Attempt) => ({
  offset,
  record: { type: 'attempt', attempt: value } as AttemptsRecord,
});
const samples = (offset: number, source: string, values: NodeActivity[]) => ({
  offset,
  record: { type: 'activity', entries: [{ source, offset: 40, samples: values }] } as AttemptsRecord,
});
const twice = [
  attempt(0, server({ key: 'k1', node: 'a', store: 'payments/node:a', at: 0 })),
  attempt(1, server({ key: 'k1', node: 'b', store: 'payments/node:b', at: 3 })),
];

describe('one attempts partition', () => {
  it("checkpoints its file's WAL on the background thread, not inside its commits", () => {
    expect(partitionDetector().checkpointsInBackground).toBe(true);
  });

  it('commits a duplicate with the offset it covers and the records that publish it', () => {
    const detector = partitionDetector();
    expect(detector.apply(twice, 1)).toBe(2);
    expect(detector.appliedOffset).toBe(1);
    const types = detector.pending().map((record) => record.type);
    expect(types).toEqual(['finding', 'incident']);
    detector.delivered(2);
    expect(detector.pending()).toEqual([]);
  });

  it('publishes, on taking the partition over, every incident part it holds and then their ids', () => {
    const detector = partitionDetector();
    detector.apply(twice, 1);
    detector.delivered(detector.pending().length);
    const [incident] = detector.detector.incidents();
    detector.publishTakeover();
    const horizon = defaultDetectorConfig().retryHorizonMillis;
    expect(detector.pending()).toEqual([
      { type: 'incident', id: incident!.id, partition: 3, incident },
      {
        type: 'parts',
        partition: 3,
        incidentIds: [incident!.id],
        sinceUnixMillis: TEST_EPOCH_UNIX_MILLIS + 60_000 - horizon + 10 * 60_000,
      },
    ]);
  });

  it('ignores records Kafka delivers again at or below the applied offset', () => {
    const detector = partitionDetector();
    detector.apply(twice, 1);
    detector.delivered(detector.pending().length);
    expect(detector.apply(twice, 1)).toBe(0);
    expect(detector.pending()).toEqual([]);
  });

  it('keeps its state, offset and undelivered records across a restart', () => {
    const path = join(dir, 'restart.db');
    const first = partitionDetector(path);
    first.apply(twice, 1);
    const pending = first.pending();
    first.close();
    open.splice(open.indexOf(first), 1);
    const again = partitionDetector(path);
    expect(again.appliedOffset).toBe(1);
    expect(again.pending()).toEqual(pending);
    expect(again.detector.findings().map((finding) => finding.id)).toEqual([
      pending[0]!.type === 'finding' && pending[0]!.id,
    ]);
  });

  it("counts an ingest instance's activity once when it is written again from the same traces offset", () => {
    const path = join(dir, 'activity.db');
    const detector = partitionDetector(path);
    const traffic = activity({ node: 'a', fromSecond: 0, toSecond: 1, spans: 10 });
    detector.apply([samples(0, 'otlp_spans/0', traffic)], 0);
    detector.apply([samples(1, 'otlp_spans/0', traffic), samples(2, '', traffic)], 2);
    detector.close();
    open.splice(open.indexOf(detector), 1);
    const store = new KeyscopeStore({ path });
    // 10 from the first copy, none from the repeat, 10 from an OTLP request (never deduplicated).
    expect(store.recentActivity(60_000).reduce((sum, sample) => sum + sample.spans, 0)).toBe(20);
    store.close();
  });

  it('publishes the incident of a duplicate that was its last activity as settled 16 s after the repeat, on its ticks alone', () => {
    const detector = partitionDetector();
    // k1 runs on a, again on b at second 3; a and b serve until second 4, and nothing follows.
    const traffic = ['a', 'b'].flatMap((node) => activity({ node, fromSecond: 0, toSecond: 4 }));
    detector.apply([...twice, samples(2, '', traffic)], 2);
    const incidents = () =>
      detector.pending().flatMap((record) => (record.type === 'incident' ? [record] : []));
    expect(incidents()).toMatchObject([{ incident: { settled: false } }]);
    detector.delivered(detector.pending().length);
    let settledAt: number | undefined;
    for (let now = TEST_EPOCH_UNIX_MILLIS + 4_000; now <= TEST_EPOCH_UNIX_MILLIS + 120_000; now += 500) {
      detector.tick(now);
      if (settledAt === undefined && incidents().some((record) => record.incident?.settled === true))
        settledAt = now;
      detector.delivered(detector.pending().length);
    }
    // The lateness (10 s) and the detection horizon (6 s) past the repeat.
    expect(settledAt).toBe(TEST_EPOCH_UNIX_MILLIS + 3_000 + 16_000);
  });

  it('publishes the routing events its ticks infer, on a tick that changes nothing else too', () => {
    const detector = partitionDetector();
    // Node b goes silent from second 10 to 20 while a serves: a node_down of b, from activity alone.
    const before = ['a', 'b'].flatMap((node) => activity({ node, fromSecond: 0, toSecond: 10 }));
    detector.apply([samples(0, '', before)], 0);
    detector.tick(TEST_EPOCH_UNIX_MILLIS + 10_000);
    expect(detector.pending().map((record) => record.type)).toEqual(['scope']);
    detector.delivered(1);
    const after = [
      ...activity({ node: 'a', fromSecond: 10, toSecond: 40 }),
      ...activity({ node: 'b', fromSecond: 20, toSecond: 40 }),
    ];
    detector.apply([{ ...samples(1, '', after) }], 1);
    expect(detector.pending()).toEqual([]);
    // The silence closes: the event is all this tick changes.
    detector.tick(TEST_EPOCH_UNIX_MILLIS + 60_000);
    expect(detector.pending()).toMatchObject([
      { type: 'routing-event', routingEvent: { type: 'node_down', node: 'b', ended: true } },
    ]);
    const [published] = detector.pending();
    expect(published).toMatchObject({ id: (published as { routingEvent: { id: string } }).routingEvent.id });
    detector.delivered(1);
    detector.tick(TEST_EPOCH_UNIX_MILLIS + 61_000);
    expect(detector.pending()).toEqual([]);
  });

  it('judges the keys a routing event regroups a step at a time, publishing each step, and settles their incident after the last', () => {
    // 30 keys run on a, then on b as a goes silent at second 60: a node_down of a regroups them all.
    const keys = Array.from({ length: 30 }, (_, i) => [
      attempt(
        2 * i,
        server({ key: `k${i}`, node: 'a', store: 'A', at: 58 + i * 0.05, durationMillis: 1900 }),
      ),
      attempt(2 * i + 1, server({ key: `k${i}`, node: 'b', store: 'B', at: 61 + i * 0.05 })),
    ]).flat();
    const early = [
      ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
      ...['b', 'c'].flatMap((node) => activity({ node, fromSecond: 0, toSecond: 62 })),
    ];
    const late = [
      ...activity({ node: 'a', fromSecond: 120, toSecond: 180 }),
      ...['b', 'c'].flatMap((node) => activity({ node, fromSecond: 62, toSecond: 180 })),
    ];
    const now = TEST_EPOCH_UNIX_MILLIS + 180_000;
    const seen = () => {
      const detector = partitionDetector();
      detector.apply([...keys, samples(60, '', early)], 60);
      detector.apply([samples(61, '', late)], 61);
      detector.delivered(detector.pending().length);
      return detector;
    };
    const published = (detector: PartitionDetector) => {
      const records = detector.pending();
      detector.delivered(records.length);
      return {
        findings: records.filter((record) => record.type === 'finding').length,
        settled: records.some((record) => record.type === 'incident' && record.incident?.settled === true),
      };
    };

    const whole = seen();
    whole.tick(now);
    expect(published(whole)).toMatchObject({ findings: 30, settled: true });

    const stepped = seen();
    stepped.tick(now, { maxRegroupedKeys: 0 });
    expect(published(stepped)).toEqual({ findings: 0, settled: false });
    expect(stepped.judgeRegrouped(16)).toBe(true);
    expect(published(stepped)).toEqual({ findings: 16, settled: false });
    expect(stepped.judgeRegrouped(16)).toBe(false);
    expect(published(stepped)).toEqual({ findings: 14, settled: true });
    expect(stepped.judgeRegrouped(16)).toBe(false);
    expect(stepped.pending()).toEqual([]);
    expect(stepped.detector.findings()).toEqual(whole.detector.findings());
    expect(stepped.detector.incidents()).toEqual(whole.detector.incidents());
  });

  it('publishes its scope report counts on a tick, and again only when they move', () => {
    const detector = partitionDetector();
    detector.apply(twice, 1);
    detector.delivered(detector.pending().length);
    detector.tick(TEST_EPOCH_UNIX_MILLIS + 60_000);
    expect(detector.pending().map((record) => record.type)).toEqual(['scope']);
    detector.delivered(1);
    detector.tick(TEST_EPOCH_UNIX_MILLIS + 61_000);
    expect(detector.pending()).toEqual([]);
  });
});

process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
