import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerAttempt } from '@keyscope/attempts';
import { createDetector, defaultDetectorConfig, type Incident } from '@keyscope/detector';
import { server } from '@keyscope/testkit';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../../services/analyzer/src/config.ts';
import { encodeAttemptRecord } from '../../services/analyzer/src/kafka/attempt-records.ts';
import { encodeIncidentRecord } from '../../services/analyzer/src/kafka/incident-records.ts';
import { createKafkaClient } from '../../services/analyzer/src/kafka/kafka-client.ts';
import { type RunningRoles, startRoles } from '../../services/analyzer/src/kafka/start-roles.ts';
import { silentLogger } from '../../services/analyzer/src/logger.ts';

/**
 * A detect instance killed between attributing a key and moving it to the incident that explains
 * it leaves an incident part behind that its successor, rebuilt from the attempts topic, never
 * held and so never retracts. The successor publishes what it holds once caught up, and the serve
 * role drops the rest of that partition's parts.
 */
function execution(node: string, startUnixMillis: number): ServerAttempt {
  return server({
    key: 'order-7',
    traceId: `${node === 'a' ? '1' : '2'}`.padStart(32, '0'),
    spanId: `${node === 'a' ? '1' : '2'}`.padStart(16, '0'),
    startUnixMillis,
    durationMillis: 5,
    service: 'payments',
    node,
    cluster: 'c1',
    region: 'r1',
    zone: 'z1',
    operation: 'POST /payments',
    outcome: 'miss',
    store: `payments/node:${node}`,
    scope: 'node',
    statusCode: 201,
  });
}

let cluster: KafkaCluster;
let keyscope: RunningRoles | undefined;
const dir = mkdtempSync(join(tmpdir(), 'keyscope-takeover-'));

beforeAll(async () => {
  cluster = await startKafkaCluster({ traces: 1, attempts: 2, incidents: 2 });
}, 60_000);

afterAll(async () => {
  await keyscope?.stop();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a detect instance taking over an attempts partition', () => {
  it("drops the incident parts its predecessor left behind, and keeps what the partition's state holds", async () => {
    const startUnixMillis = Date.now() - 60_000;
    const attempts = [execution('a', startUnixMillis), execution('b', startUnixMillis + 40)];
    // What the predecessor published for partition 1 before it was killed: the same key under an
    // incident id the rebuilt state will not hold.
    const predecessor = createDetector(defaultDetectorConfig()).ingest({
      attempts,
      activity: [],
      invalid: { outcome: 0, hit: 0, scope: 0 },
    });
    const stale: Incident = { ...predecessor.incidents[0]!, id: 'inc_left_behind' };
    const kafka = createKafkaClient({ brokers: cluster.brokers, clientId: 'takeover' }, 'test', silentLogger);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: cluster.topic('attempts'),
      messages: attempts.map((attempt) => ({
        key: attempt.key,
        value: encodeAttemptRecord(attempt),
        partition: 1,
      })),
    });
    await producer.send({
      topic: cluster.topic('incidents'),
      messages: [
        {
          ...encodeIncidentRecord({ type: 'incident', id: stale.id, partition: 1, incident: stale }),
          partition: 1,
        },
      ],
    });
    await producer.disconnect();

    keyscope = await startRoles(
      resolveServeConfig({
        role: 'all',
        api: { port: 0 },
        otlp: { http: { port: 0 }, grpc: { port: 0 } },
        db: { path: join(dir, 'serve.db') },
        kafka: {
          brokers: cluster.brokers,
          traces: { topic: cluster.topic('traces'), groupId: cluster.group('ingest') },
          attempts: { topic: cluster.topic('attempts'), groupId: cluster.group('detect') },
          incidents: { topic: cluster.topic('incidents') },
          stateDir: join(dir, 'partitions'),
        },
      }),
      { logger: silentLogger },
    );
    const api = `http://127.0.0.1:${keyscope.addresses.api.port}`;
    const deadline = Date.now() + 60_000;
    let ids: string[] = [];
    do {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const body = (await (await fetch(`${api}/api/v1/incidents`)).json()) as { items: { id: string }[] };
      ids = body.items.map((incident) => incident.id);
    } while (Date.now() < deadline && (ids.includes(stale.id) || ids.length === 0));
    expect(ids).toEqual([predecessor.incidents[0]!.id]);
  }, 120_000);
});
