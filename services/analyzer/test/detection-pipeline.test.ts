import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultMapping, mappingDecodeOptions } from '@keyscope/attempts';
import { defaultDetectorConfig } from '@keyscope/detector';
import { isKeyscopeError } from '@keyscope/errors';
import { type Span, SpanKind, StatusCode } from '@keyscope/otlp';
import { duplicateSome, scenarios, shuffle, simulate, splitIntoPayloads } from '@keyscope/simulator';
import { KeyscopeStore } from '@keyscope/store';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { DetectionPipeline } from '../src/pipeline/detection-pipeline.ts';

let dir: string;
let path: string;
let store: KeyscopeStore;
let pipeline: DetectionPipeline;
/** The service clock: a minute after the first execution below. */
const NOW = 1_767_225_600_000 + 60_000;

/** The dedup decision of one request: key `key` executed (`miss`) in node `node`'s store. */
function execution(key: string, node: string, id: number): Span {
  return {
    traceId: id.toString(16).padStart(32, '0'),
    spanId: id.toString(16).padStart(16, '0'),
    parentSpanId: '',
    name: 'POST /payments',
    kind: SpanKind.SERVER,
    startTimeUnixMillis: 1_767_225_600_000 + id * 1000,
    endTimeUnixMillis: 1_767_225_600_000 + id * 1000 + 100,
    status: { code: StatusCode.UNSET, message: '' },
    attributes: {
      'idempotency.key': key,
      'idempotency.outcome': 'miss',
      'idempotency.scope': 'node',
      'http.route': '/payments',
    },
    events: [],
    resource: { attributes: { 'service.name': 'payments', 'service.instance.id': node } },
    scope: { name: 'test', version: '' },
  };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-pipeline-'));
  path = join(dir, 'keyscope.db');
  store = new KeyscopeStore({ path });
  pipeline = new DetectionPipeline({
    mapping: defaultMapping(),
    spans: defaultServeConfig().spans,
    detectorConfig: defaultDetectorConfig(),
    store,
    logger: silentLogger,
    now: () => NOW,
  });
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the detection pipeline', () => {
  it('asks the receivers to decode only what extraction reads, most attributes on keyed spans only', () => {
    expect(pipeline.decodeOptions).toEqual(mappingDecodeOptions(defaultMapping()));
    expect(pipeline.decodeOptions.spanAttributes).toHaveProperty('whenKeyed');
  });

  it('commits concurrent payloads in one transaction and acknowledges each after it', async () => {
    pipeline.counts();
    const results = await Promise.all([
      pipeline.consumeSpans([execution('k1', 'a', 1)]),
      pipeline.consumeSpans([execution('k1', 'b', 2)]),
      pipeline.consumeSpans([execution('k2', 'a', 3)]),
    ]);
    expect(results.every((r) => r.rejectedSpans === 0)).toBe(true);
    expect(pipeline.counts().storeWriteSeconds).toHaveLength(1);
    expect(store.findings.list({}, { limit: 10 }).items.map((f) => [f.key, f.class])).toEqual([
      ['k1', 'cross_store_duplicate'],
    ]);
  });

  it('judges a key once per group commit, however many of its payloads carried it', async () => {
    pipeline.counts();
    // Alone, the second payload would update the finding the first made: reported twice.
    await Promise.all([
      pipeline.consumeSpans([execution('k1', 'a', 1), execution('k1', 'b', 2)]),
      pipeline.consumeSpans([execution('k1', 'c', 3)]),
    ]);
    const counts = pipeline.counts();
    expect(counts.storeWriteSeconds).toHaveLength(1);
    expect(counts.findings.cross_store_duplicate).toBe(1);
    expect(store.findings.list({}, { limit: 10 }).items).toMatchObject([{ key: 'k1', executions: 3 }]);
  });

  it('refuses every payload of a group whose transaction failed, retryably, and recovers', async () => {
    // From a second connection to the file: the store's own sees the new schema at its next write.
    const other = new BetterSqlite3(path);
    other.exec(
      "CREATE TRIGGER refuse BEFORE INSERT ON attempt_batches BEGIN SELECT RAISE(ABORT, 'disk says no'); END;",
    );
    const outcomes = await Promise.allSettled([
      pipeline.consumeSpans([execution('k1', 'a', 1)]),
      pipeline.consumeSpans([execution('k1', 'b', 2)]),
    ]);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const reason = (outcome as PromiseRejectedResult).reason;
      expect(isKeyscopeError(reason) && reason.code).toBe('KS_STORE_UNAVAILABLE');
      expect(isKeyscopeError(reason) && reason.retryable).toBe(true);
    }
    other.exec('DROP TRIGGER refuse');
    other.close();
    // The sender retries both: nothing of the first try was committed, and nothing is lost.
    await Promise.all([
      pipeline.consumeSpans([execution('k1', 'a', 1)]),
      pipeline.consumeSpans([execution('k1', 'b', 2)]),
    ]);
    expect(store.findings.list({}, { limit: 10 }).items.map((f) => f.class)).toEqual([
      'cross_store_duplicate',
    ]);
  });

  it('ignores a redelivered payload and counts its spans as duplicates, before and after indexing', async () => {
    for (const indexBatchRows of [1_000_000, 1]) {
      const own = new KeyscopeStore({ path: ':memory:', attemptIndexBatchRows: indexBatchRows });
      const redelivering = new DetectionPipeline({
        mapping: defaultMapping(),
        spans: defaultServeConfig().spans,
        detectorConfig: defaultDetectorConfig(),
        store: own,
        logger: silentLogger,
        now: () => NOW,
      });
      const payload = [execution('k1', 'a', 1), execution('k1', 'b', 2)];
      await redelivering.consumeSpans(payload);
      const [first] = own.findings.list({}, { limit: 10 }).items;
      expect(first).toMatchObject({ key: 'k1', executions: 2 });
      // Again alone, then twice in one group commit, then within one payload.
      await redelivering.consumeSpans(payload.map((span) => ({ ...span })));
      await Promise.all([redelivering.consumeSpans([...payload]), redelivering.consumeSpans([...payload])]);
      await redelivering.consumeSpans([execution('k2', 'a', 3), execution('k2', 'a', 3)]);
      const counts = redelivering.counts();
      expect(counts.duplicateSpans).toBe(7);
      expect(counts.attempts.server).toBe(10);
      const findings = own.findings.list({}, { limit: 10 }).items;
      expect(findings).toHaveLength(1);
      expect(findings[0]).toMatchObject({ id: first!.id, executions: 2, attempts: first!.attempts });
      own.close();
    }
  });

  it('keeps the node activity of a payload delivered again once, also when it shares a group commit with new payloads', async () => {
    const payload = [execution('k1', 'a', 1), execution('k1', 'b', 2)];
    await pipeline.consumeSpans(payload);
    // Its retry arrives in the same turn as a new payload: both go to one transaction.
    await Promise.all([
      pipeline.consumeSpans(payload.map((span) => ({ ...span }))),
      pipeline.consumeSpans([execution('k2', 'c', 3)]),
    ]);
    const spansByNode: Record<string, number> = {};
    for (const sample of store.recentActivity(60 * 60_000))
      spansByNode[sample.placement.node] = (spansByNode[sample.placement.node] ?? 0) + sample.spans;
    expect(spansByNode).toEqual({ a: 1, b: 1, c: 1 });
    expect(pipeline.counts().duplicateSpans).toBe(2);
  });
});

/**
 * A node failover's spans delivered as a Kafka backlog replay or a slow Collector delivers them:
 * in a seeded random order (a span as late as the whole run), in payloads, some delivered twice,
 * with the service's one-second ticks in between on a clock that moves on. What SQLite holds at
 * the end — findings, their routing events, incidents — is what in-order delivery leaves there.
 */
describe('the detection pipeline fed spans in any order', () => {
  const scenario = scenarios.nodeFailover();
  const { spans } = simulate(scenario);

  /**
   * `regroupStep`: ticks leave the keys a changed routing event judges again waiting, and they are
   * judged that many per transaction before the next payload, as the service does between requests.
   */
  async function deliver(payloads: Span[][], regroupStep?: number) {
    const own = new KeyscopeStore({ path: join(dir, `order-${Math.random().toString(36).slice(2)}.db`) });
    let clock = scenario.startUnixMillis;
    const endUnixMillis = scenario.startUnixMillis + scenario.durationMillis + 30_000;
    const stepMillis = (endUnixMillis - clock) / payloads.length;
    const replaying = new DetectionPipeline({
      mapping: defaultMapping(),
      spans: defaultServeConfig().spans,
      detectorConfig: defaultDetectorConfig(),
      store: own,
      logger: silentLogger,
      now: () => clock,
    });
    let mostWaiting = 0;
    const tick = () => {
      if (regroupStep === undefined) return replaying.tick();
      replaying.tick(clock, { maxRegroupedKeys: 0 });
      mostWaiting = Math.max(mostWaiting, replaying.detector.regroupedKeys());
      while (replaying.judgeRegrouped(regroupStep));
    };
    for (const payload of payloads) {
      const result = await replaying.consumeSpans(payload.map((span) => ({ ...span })));
      expect(result.rejectedSpans).toBe(0);
      clock += stepMillis;
      tick();
    }
    for (let i = 0; i < 3; i++) {
      clock += 10_000;
      tick();
    }
    const stored = {
      findings: own.findings
        .list({}, { limit: 1000 })
        .items.map(
          (f) => `${f.id} ${f.incidentId} ${f.routing.event?.id ?? '-'} ${f.routing.event?.endUnixMillis}`,
        )
        .sort(),
      incidents: own.incidents
        .list({}, { limit: 1000 })
        .items.map((i) => `${i.id} ${i.keys} ${i.routingEvent?.id ?? '-'} ${i.settled}`)
        .sort(),
      events: replaying.detector
        .routingEvents()
        .map((e) => `${e.id} ${e.startUnixMillis} ${e.endUnixMillis}`),
    };
    own.close();
    return { stored, mostWaiting };
  }

  it('stores the findings, routing events and incidents of in-order delivery', async () => {
    const { stored: inOrder } = await deliver(splitIntoPayloads(spans, 150, 1));
    expect(inOrder.incidents).toHaveLength(2);
    expect(inOrder.events).toHaveLength(2);
    const shuffled = splitIntoPayloads(shuffle(spans, 3), 150, 3);
    expect((await deliver(shuffled)).stored).toEqual(inOrder);
    // About 1 in 7 payloads delivered again, a few payloads later (an exporter's retry).
    const redelivered = shuffled.flatMap((payload, i) =>
      i % 7 === 3 ? [payload] : i % 7 === 6 ? [payload, duplicateSome(shuffled[i - 3]!, 1, i)] : [payload],
    );
    expect(redelivered.length).toBeGreaterThan(shuffled.length + 15);
    expect((await deliver(redelivered)).stored).toEqual(inOrder);
  }, 60_000);

  it('stores what a whole tick stores when the keys a routing event regroups are judged a few per transaction', async () => {
    const payloads = splitIntoPayloads(spans, 150, 1);
    const { stored: whole } = await deliver(payloads);
    const stepped = await deliver(payloads, 3);
    expect(stepped.mostWaiting).toBeGreaterThan(3);
    expect(stepped.stored).toEqual(whole);
  }, 60_000);
});
