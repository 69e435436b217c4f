import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { partitionKey, type ServerAttempt } from '@keyscope/attempts';
import { server } from '@keyscope/testkit';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../../services/analyzer/src/config.ts';
import { encodeAttemptRecord } from '../../services/analyzer/src/kafka/attempt-records.ts';
import { createKafkaClient } from '../../services/analyzer/src/kafka/kafka-client.ts';
import { type RunningRoles, startRoles } from '../../services/analyzer/src/kafka/start-roles.ts';
import { silentLogger } from '../../services/analyzer/src/logger.ts';
import { counterReaches } from './support/counter-reaches.ts';

/**
 * A detect instance that finds a backlog (after a restart, a rebalance, or falling behind) applies
 * it in large transactions, not one per fetched batch: a fetch may hand over only a few records
 * per partition, and a transaction per handful of attempts made the role commit-bound.
 */
const ATTEMPTS = 600;
const PARTITIONS = 2;

/** The one execution of a key, in node a's store: no finding, only state to apply. */
function cleanAttempt(n: number, startUnixMillis: number): ServerAttempt {
  return server({
    key: `key-${n}`,
    traceId: (n + 1).toString(16).padStart(32, '0'),
    spanId: (n + 1).toString(16).padStart(16, '0'),
    startUnixMillis,
    durationMillis: 5,
    service: 'payments',
    node: 'a',
    cluster: 'c1',
    region: 'r1',
    zone: 'z1',
    operation: 'POST /payments',
    outcome: 'miss',
    store: 'A',
    scope: '',
    statusCode: 201,
  });
}

let cluster: KafkaCluster;
let keyscope: RunningRoles | undefined;
let lateKeyscope: RunningRoles | undefined;
/** The first test's detect role, which the restart test starts again on the same state files. */
let detectConfig: ReturnType<typeof resolveServeConfig> | undefined;
const dir = mkdtempSync(join(tmpdir(), 'keyscope-detect-backlog-'));

beforeAll(async () => {
  cluster = await startKafkaCluster({
    attempts: PARTITIONS,
    incidents: 1,
    'attempts-late': 1,
    'incidents-late': 1,
  });
}, 60_000);

afterAll(async () => {
  await keyscope?.stop();
  await lateKeyscope?.stop();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('the detect role reading a backlog', () => {
  it('applies every attempt in a few transactions per partition', async () => {
    const kafka = createKafkaClient({ brokers: cluster.brokers, clientId: 'backlog' }, 'test', silentLogger);
    const producer = kafka.producer();
    await producer.connect();
    const startUnixMillis = Date.now() - 60_000;
    // Small sends, as an ingest role writes them: many small record batches in each partition.
    for (let sent = 0; sent < ATTEMPTS; sent += 10) {
      await producer.send({
        topic: cluster.topic('attempts'),
        messages: Array.from({ length: 10 }, (_, i) => {
          const attempt = cleanAttempt(sent + i, startUnixMillis + sent + i);
          return {
            key: partitionKey(attempt, { keyNamespace: 'global' }),
            value: encodeAttemptRecord(attempt),
          };
        }),
      });
    }
    await producer.disconnect();

    const config = resolveServeConfig({
      role: 'detect',
      api: { port: 0 },
      kafka: {
        brokers: cluster.brokers,
        attempts: { topic: cluster.topic('attempts'), groupId: cluster.group('detect') },
        incidents: { topic: cluster.topic('incidents') },
        stateDir: join(dir, 'partitions'),
        // librdkafka's mock broker, unlike Kafka, keeps a group its last member left waiting for
        // members for the session timeout less a second (rdkafka_mock_cgrp.c), so the restart
        // below gets its partitions that long after it joins: 5 s here, not 29.
        sessionTimeoutMillis: 6_000,
      },
    });
    keyscope = await startRoles(config, { logger: silentLogger });
    const counters = keyscope.counters!;
    expect(await counterReaches(() => counters.attemptsDetected, ATTEMPTS)).toBe(ATTEMPTS);
    // One transaction per fetched batch would be dozens; a rebalance may add a replay per partition.
    expect(counters.detectTransactions).toBeLessThanOrEqual(4 * PARTITIONS);
    detectConfig = config;
  }, 120_000);

  it('takes its partitions up again from its own state files after a restart, applying nothing twice', async () => {
    await keyscope!.stop();
    keyscope = await startRoles(detectConfig!, { logger: silentLogger });
    const counters = keyscope.counters!;
    expect(await counterReaches(() => counters.resumes, PARTITIONS)).toBeGreaterThanOrEqual(PARTITIONS);
    expect(counters.rebuilds).toBe(0);
    // Positioned after what its files hold: a second to fetch finds nothing to apply again.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(counters.attemptsDetected).toBe(0);
  }, 120_000);

  it('skips a run of records past the horizon without taking it for a gap', async () => {
    const kafka = createKafkaClient({ brokers: cluster.brokers, clientId: 'late' }, 'test', silentLogger);
    const producer = kafka.producer();
    await producer.connect();
    const topic = cluster.topic('attempts-late');
    const send = async (from: number, count: number, timestamp: number) => {
      for (let sent = from; sent < from + count; sent += 10) {
        await producer.send({
          topic,
          messages: Array.from({ length: 10 }, (_, i) => {
            const attempt = cleanAttempt(sent + i, timestamp + sent + i);
            return { key: attempt.key, value: encodeAttemptRecord(attempt), timestamp: String(timestamp) };
          }),
        });
      }
    };
    const errors: string[] = [];
    const config = resolveServeConfig({
      role: 'detect',
      api: { port: 0 },
      kafka: {
        brokers: cluster.brokers,
        attempts: { topic, groupId: cluster.group('detect-late') },
        incidents: { topic: cluster.topic('incidents-late') },
        stateDir: join(dir, 'late-partitions'),
      },
    });
    lateKeyscope = await startRoles(config, {
      logger: { info: () => {}, error: (line) => errors.push(line) },
    });
    const counters = lateKeyscope.counters!;
    const waitFor = (attempts: number) => counterReaches(() => counters.attemptsDetected, attempts);
    // State first (applied offsets), then a run of records older than the 24 h horizon, then new ones.
    await send(0, 50, Date.now());
    expect(await waitFor(50)).toBe(50);
    await send(1_000, 200, Date.now() - 25 * 60 * 60 * 1000);
    await send(2_000, 50, Date.now());
    await producer.disconnect();
    expect(await waitFor(100)).toBe(100);
    expect(counters.rebuildSkipped).toBe(200);
    expect(errors.filter((line) => line.includes('no longer exist'))).toEqual([]);
  }, 120_000);
});
