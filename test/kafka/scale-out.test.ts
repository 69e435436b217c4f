import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTraces } from '@keyscope/otlp';
import { scenarios, simulate } from '@keyscope/simulator';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaClient } from '../../services/analyzer/src/kafka/kafka-client.ts';
import { silentLogger } from '../../services/analyzer/src/logger.ts';
import { exportAsCollector, type MessageProducer } from './support/collector-exporter.ts';
import { embeddedOutcome } from './support/embedded-run.ts';
import {
  kafkaEnvironment,
  type RoleProcess,
  startRole,
  stopDeployment,
  type Topics,
} from './support/keyscope-roles.ts';
import { outcomeWhenEqual } from './support/outcome.ts';

/**
 * The scaled mode across processes, as docker-compose.yml runs it: two ingest instances share the
 * Collector's traces topic, two detect instances share the attempts topic, one serve instance
 * answers. What it finds must be exactly what one embedded process finds for the same spans —
 * also after a detect instance is killed mid-stream and its partitions move to the other.
 */
const first = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 10 * 60_000 }), {
  seed: 9,
}).spans;
const second = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 4 * 60_000 }), {
  seed: 21,
}).spans;

let cluster: KafkaCluster;
let topics: Topics;
let producer: MessageProducer & { disconnect(): Promise<void> };
const dir = mkdtempSync(join(tmpdir(), 'keyscope-scale-out-'));
const roles: RoleProcess[] = [];

beforeAll(async () => {
  // Two failovers are 16 MiB of OTLP: spread so that no partition nears the mock broker's 5 MiB.
  cluster = await startKafkaCluster({ traces: 8, attempts: 6, incidents: 3 });
  topics = {
    traces: cluster.topic('traces'),
    attempts: cluster.topic('attempts'),
    incidents: cluster.topic('incidents'),
  };
  const kafka = createKafkaClient({ brokers: cluster.brokers, clientId: 'collector' }, 'test', silentLogger);
  const kafkaProducer = kafka.producer();
  await kafkaProducer.connect();
  producer = kafkaProducer;
  // A member that stops heartbeating loses its partitions after this long.
  const environment = { ...kafkaEnvironment(cluster, topics), KEYSCOPE_KAFKA_SESSION_TIMEOUT_MILLIS: '6000' };
  roles.push(
    ...(await Promise.all([
      startRole('ingest', environment),
      startRole('ingest', environment),
      startRole('detect', { ...environment, KEYSCOPE_KAFKA_STATE_DIR: join(dir, 'detect-1') }),
      startRole('detect', { ...environment, KEYSCOPE_KAFKA_STATE_DIR: join(dir, 'detect-2') }),
      startRole('serve', { ...environment, KEYSCOPE_DB_PATH: join(dir, 'serve.db') }),
    ])),
  );
}, 60_000);

afterAll(() => stopDeployment({ roles, producer, cluster, dir }), 60_000);

const serve = () => roles.find((role) => role.role === 'serve')!;
const detects = () => roles.filter((role) => role.role === 'detect');

async function metric(role: RoleProcess, name: string): Promise<number> {
  expect(role.child.exitCode, `${role.role} exited:\n${role.output()}`).toBeNull();
  const text = await (await fetch(`${role.api}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
}

describe('two ingest and two detect instances', () => {
  it('find exactly what one embedded process finds for the same failover', async () => {
    const expected = await embeddedOutcome([first]);
    expect(expected.findings.length).toBeGreaterThan(0);
    // The failover's routing events, which serve learns from the detectors' routing-event records.
    expect(expected.routingEvents.length).toBeGreaterThan(0);
    await exportAsCollector(producer, topics.traces, first, { encoding: 'otlp_proto' });
    const actual = await outcomeWhenEqual(serve().api, expected, 90_000);
    expect(actual).toEqual(expected);
    // Both detect instances took part: the group spread the attempts partitions over them.
    const owned = await Promise.all(detects().map((role) => metric(role, 'keyscope_kafka_partitions_owned')));
    expect(owned.reduce((a, b) => a + b, 0)).toBe(6);
    expect(owned).not.toContain(0);
  }, 120_000);

  it('lose and double nothing when a detect instance is killed mid-stream, with spans from the topic and OTLP/HTTP', async () => {
    const expected = await embeddedOutcome([first, second]);
    const half = Math.floor(second.length / 2);
    await exportAsCollector(producer, topics.traces, second.slice(0, half), { encoding: 'otlp_proto' });
    // Mid-stream: the first half is being ingested and detected while the process dies.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const [victim, survivor] = detects() as [RoleProcess, RoleProcess];
    const positioned = async () =>
      (await metric(survivor, 'keyscope_kafka_partition_rebuilds_total')) +
      (await metric(survivor, 'keyscope_kafka_partition_resumes_total'));
    const positionedBefore = await positioned();
    const victimOwned = await metric(victim, 'keyscope_kafka_partitions_owned');
    victim.child.kill('SIGKILL');
    await victim.exited;
    // The rest over OTLP/HTTP to an ingest instance's own receiver: it joins the same attempts topic.
    const ingest = roles.find((role) => role.role === 'ingest')!;
    for (let i = half; i < second.length; i += 300) {
      const response = await fetch(`${ingest.otlpHttp}/v1/traces`, {
        method: 'POST',
        body: encodeTraces(second.slice(i, Math.min(i + 300, second.length))),
        headers: { 'content-type': 'application/x-protobuf' },
      });
      await response.arrayBuffer();
      expect(response.status).toBe(200);
    }
    const actual = await outcomeWhenEqual(serve().api, expected, 120_000);
    expect(actual).toEqual(expected);
    expect(await metric(survivor, 'keyscope_kafka_partitions_owned')).toBe(6);
    // Every partition it took over was positioned here: rebuilt from the attempts topic, or, when
    // the survivor had owned it before (the mock's SyncGroup race can reshuffle the group early)
    // and the victim had not moved it on since, taken up from the survivor's own, still current file.
    expect((await positioned()) - positionedBefore).toBeGreaterThanOrEqual(victimOwned);
  }, 180_000);
});
