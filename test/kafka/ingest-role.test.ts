import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultMapping, extractAttempts } from '@keyscope/attempts';
import { encodeTraces } from '@keyscope/otlp';
import { scenarios, simulate } from '@keyscope/simulator';
import { metricValue } from '@keyscope/testkit';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../../services/analyzer/src/config.ts';
import { createKafkaClient } from '../../services/analyzer/src/kafka/kafka-client.ts';
import { type RunningRoles, startRoles } from '../../services/analyzer/src/kafka/start-roles.ts';
import { silentLogger } from '../../services/analyzer/src/logger.ts';
import { counterReaches } from './support/counter-reaches.ts';
import { whenEqual } from './support/when-equal.ts';

/**
 * The scaled mode's ingest role. An instance that finds a backlog on the traces topic writes its
 * attempts in a few large writes, not one acknowledged write per fetched batch: a fetch may carry a
 * single message per partition, and each write waits for every in-sync replica. It keeps the OTLP
 * payloads it acknowledges in `archive.path` as the embedded service does, and its /metrics says
 * how the archive is doing.
 */
const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 5 * 60_000 }), { seed: 7 });
const MESSAGES = 200;
/** OTLP/HTTP requests the archive test sends. */
const PAYLOADS = 3;
const PARTITIONS = 2;

let cluster: KafkaCluster;
let keyscope: RunningRoles | undefined;
const dir = mkdtempSync(join(tmpdir(), 'keyscope-ingest-backlog-'));

beforeAll(async () => {
  cluster = await startKafkaCluster({ traces: PARTITIONS, attempts: 2 });
}, 60_000);

afterAll(async () => {
  await keyscope?.stop();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('the ingest role reading a backlog', () => {
  it('writes the attempts of many messages at a time and reads every span', async () => {
    const kafka = createKafkaClient(
      { brokers: cluster.brokers, clientId: 'collector' },
      'test',
      silentLogger,
    );
    const producer = kafka.producer();
    await producer.connect();
    const perMessage = Math.ceil(spans.length / MESSAGES);
    let sent = 0;
    // One message per send, as a Collector exporting small batches writes them.
    for (let at = 0; at < spans.length; at += perMessage) {
      const batch = spans.slice(at, at + perMessage);
      await producer.send({
        topic: cluster.topic('traces'),
        messages: [{ partition: (at / perMessage) % PARTITIONS, value: Buffer.from(encodeTraces(batch)) }],
      });
      sent += batch.length;
    }
    await producer.disconnect();

    const config = resolveServeConfig({
      role: 'ingest',
      api: { port: 0 },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
      kafka: {
        brokers: cluster.brokers,
        traces: { topic: cluster.topic('traces'), groupId: cluster.group('ingest') },
        attempts: { topic: cluster.topic('attempts'), partitions: 2 },
        stateDir: join(dir, 'partitions'),
      },
    });
    keyscope = await startRoles(config, { logger: silentLogger });
    const counters = keyscope.counters!;
    expect(await counterReaches(() => counters.spansDecoded, sent)).toBe(sent);
    const attempts = extractAttempts(spans, defaultMapping()).attempts.length;
    expect(await counterReaches(() => counters.attemptsExtracted, attempts)).toBe(attempts);
    // One write per message would be 200; a rebalance may add a re-read per partition.
    expect(counters.attemptWrites).toBeLessThanOrEqual(4 * PARTITIONS + Math.ceil(MESSAGES / 64));
  }, 120_000);
});

describe("the ingest role's archive", () => {
  it('archives the payloads it acknowledges and shows the archive on its /metrics', async () => {
    await keyscope?.stop();
    keyscope = undefined;
    const archive = join(dir, 'archive');
    const config = resolveServeConfig({
      role: 'ingest',
      api: { port: 0 },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
      archive: { path: archive },
      kafka: {
        brokers: cluster.brokers,
        traces: { topic: '' },
        attempts: { topic: cluster.topic('attempts'), partitions: 2 },
        stateDir: join(dir, 'partitions'),
      },
    });
    keyscope = await startRoles(config, { logger: silentLogger });
    const otlp = keyscope.addresses.otlpHttp!;
    const per = Math.ceil(spans.length / PAYLOADS);
    for (let at = 0; at < spans.length; at += per) {
      const response = await fetch(`http://${otlp.host}:${otlp.port}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf' },
        body: Buffer.from(encodeTraces(spans.slice(at, at + per))),
      });
      expect(response.status).toBe(200);
    }
    const api = keyscope.addresses.api;
    const scrape = async () => (await fetch(`http://${api.host}:${api.port}/metrics`)).text();
    // The archive thread reports its counts once it has written a batch.
    const archived = async () => metricValue(await scrape(), 'keyscope_archive_payloads_total');
    expect(await whenEqual(archived, PAYLOADS, 30_000, 100)).toBe(PAYLOADS);
    const text = await scrape();
    expect(metricValue(text, 'keyscope_archive_written_bytes_total')).toBeGreaterThan(0);
    expect(metricValue(text, 'keyscope_archive_bytes')).toBeGreaterThan(0);
    expect(metricValue(text, 'keyscope_archive_write_failures_total')).toBe(0);

    await keyscope.stop();
    keyscope = undefined;
    expect(readdirSync(archive).filter((name) => /^traces-.*\.jsonl\.gz$/.test(name))).toHaveLength(1);
  }, 120_000);
});
