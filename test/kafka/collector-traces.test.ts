import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scenarios, simulate } from '@keyscope/simulator';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../../services/analyzer/src/config.ts';
import { createKafkaClient } from '../../services/analyzer/src/kafka/kafka-client.ts';
import { type RunningRoles, startRoles } from '../../services/analyzer/src/kafka/start-roles.ts';
import { silentLogger } from '../../services/analyzer/src/logger.ts';
import {
  type CollectorExportOptions,
  exportAsCollector,
  type MessageProducer,
} from './support/collector-exporter.ts';
import { counterReaches } from './support/counter-reaches.ts';
import { embeddedOutcome } from './support/embedded-run.ts';
import { type Outcome, outcomeWhenEqual } from './support/outcome.ts';

/**
 * The ingest role reads the Collector's traces topic as the Collector's kafka exporter writes it,
 * in both of its OTLP encodings, unkeyed or keyed by trace id: what keyscope finds from it is what
 * the embedded service finds from the same spans over OTLP/HTTP.
 */
const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 5 * 60_000 }), { seed: 9 });

let cluster: KafkaCluster;
let producer: MessageProducer & { disconnect(): Promise<void> };
let expected: Outcome;
const dir = mkdtempSync(join(tmpdir(), 'keyscope-collector-'));
const running: RunningRoles[] = [];

beforeAll(async () => {
  // The mock broker keeps 5 MiB per partition: the 29 MiB of OTLP/JSON (one message per trace)
  // are spread wide enough that nothing is dropped before it is read.
  cluster = await startKafkaCluster({
    'traces-proto': 3,
    'traces-json': 12,
    'attempts-proto': 4,
    'attempts-json': 4,
    'incidents-proto': 2,
    'incidents-json': 2,
  });
  const kafka = createKafkaClient({ brokers: cluster.brokers, clientId: 'collector' }, 'test', silentLogger);
  const kafkaProducer = kafka.producer();
  await kafkaProducer.connect();
  producer = kafkaProducer;
  expected = await embeddedOutcome([spans]);
}, 60_000);

afterAll(async () => {
  for (const roles of running) await roles.stop();
  await producer?.disconnect();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** All three roles in one process (role `all` with brokers): they still talk only through Kafka. */
async function scaledKeyscope(encoding: CollectorExportOptions['encoding']): Promise<RunningRoles> {
  const suffix = encoding === 'otlp_proto' ? 'proto' : 'json';
  const config = resolveServeConfig({
    role: 'all',
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    db: { path: join(dir, `serve-${suffix}.db`) },
    kafka: {
      brokers: cluster.brokers,
      traces: {
        topic: cluster.topic(`traces-${suffix}`),
        encoding,
        groupId: cluster.group(`ingest-${suffix}`),
      },
      attempts: { topic: cluster.topic(`attempts-${suffix}`), groupId: cluster.group(`detect-${suffix}`) },
      incidents: { topic: cluster.topic(`incidents-${suffix}`) },
      stateDir: join(dir, `partitions-${suffix}`),
    },
  });
  const roles = await startRoles(config, { logger: silentLogger });
  running.push(roles);
  return roles;
}

/**
 * Spans the ingest role decoded, once it has decoded them all (or after a bounded wait): the
 * findings can be complete while messages holding only spans without a key are still being read.
 */
function spansDecodedWhenAll(keyscope: RunningRoles): Promise<number> {
  return counterReaches(() => keyscope.counters!.snapshot().spansDecoded, spans.length, 30_000);
}

describe("the Collector's traces topic", () => {
  it('yields the embedded findings from otlp_proto messages, one per exported batch', async () => {
    expect(expected.findings.length).toBeGreaterThan(0);
    // The failover's routing events, which serve learns from the detectors' routing-event records.
    expect(expected.routingEvents.length).toBeGreaterThan(0);
    const keyscope = await scaledKeyscope('otlp_proto');
    const messages = await exportAsCollector(producer, cluster.topic('traces-proto'), spans, {
      encoding: 'otlp_proto',
    });
    expect(messages).toBe(Math.ceil(spans.length / 300));
    const api = `http://127.0.0.1:${keyscope.addresses.api.port}`;
    expect(await outcomeWhenEqual(api, expected, 60_000)).toEqual(expected);
    expect(await spansDecodedWhenAll(keyscope)).toBe(spans.length);
  }, 90_000);

  it('yields the embedded findings from otlp_json messages keyed by trace id (partition_traces_by_id)', async () => {
    const keyscope = await scaledKeyscope('otlp_json');
    const messages = await exportAsCollector(producer, cluster.topic('traces-json'), spans, {
      encoding: 'otlp_json',
      partitionTracesById: true,
    });
    expect(messages).toBeGreaterThan(Math.ceil(spans.length / 300));
    const api = `http://127.0.0.1:${keyscope.addresses.api.port}`;
    expect(await outcomeWhenEqual(api, expected, 60_000)).toEqual(expected);
    expect(await spansDecodedWhenAll(keyscope)).toBe(spans.length);
  }, 90_000);
});
