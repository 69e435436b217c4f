import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTraces } from '@keyscope/otlp';
import { scenarios, simulate } from '@keyscope/simulator';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../../services/analyzer/src/config.ts';
import { createKafkaClient } from '../../services/analyzer/src/kafka/kafka-client.ts';
import { type RunningRoles, startRoles } from '../../services/analyzer/src/kafka/start-roles.ts';
import { silentLogger } from '../../services/analyzer/src/logger.ts';
import { counterReaches } from './support/counter-reaches.ts';
import { embeddedOutcome } from './support/embedded-run.ts';
import { type Outcome, outcomeWhenEqual } from './support/outcome.ts';

/**
 * A record that cannot be read — garbage on the traces topic, a tombstone, a foreign record on the
 * attempts or incidents topic — is counted, copied to the dead-letter topic and skipped: the
 * records after it in the same partition are processed as if it were not there.
 */
const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 5 * 60_000 }), { seed: 5 });
const half = Math.floor(spans.length / 2);
const POISON = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);

let cluster: KafkaCluster;
let kafka: ReturnType<typeof createKafkaClient>;
let keyscope: RunningRoles;
let expected: Outcome;
const dir = mkdtempSync(join(tmpdir(), 'keyscope-poison-'));

beforeAll(async () => {
  cluster = await startKafkaCluster({ traces: 2, attempts: 2, incidents: 1, 'dead-letter': 1 });
  kafka = createKafkaClient({ brokers: cluster.brokers, clientId: 'collector' }, 'test', silentLogger);
  expected = await embeddedOutcome([spans]);
  const config = resolveServeConfig({
    role: 'all',
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    db: { path: join(dir, 'serve.db') },
    kafka: {
      brokers: cluster.brokers,
      traces: { topic: cluster.topic('traces'), groupId: cluster.group('ingest') },
      attempts: { topic: cluster.topic('attempts'), groupId: cluster.group('detect') },
      incidents: { topic: cluster.topic('incidents') },
      deadLetter: { topic: cluster.topic('dead-letter') },
      stateDir: join(dir, 'partitions'),
    },
  });
  keyscope = await startRoles(config, { logger: silentLogger });
}, 60_000);

afterAll(async () => {
  await keyscope?.stop();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function deadLetters(count: number, timeoutMillis: number) {
  const consumer = kafka.consumer({ groupId: cluster.group('dead-letter-reader') });
  const received: { headers: Record<string, string>; value: Buffer | null }[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic: cluster.topic('dead-letter'), fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      const headers = Object.fromEntries(
        Object.entries(message.headers ?? {}).map(([name, value]) => [name, String(value)]),
      );
      received.push({ headers, value: message.value });
    },
  });
  await counterReaches(() => received.length, count, timeoutMillis);
  await consumer.disconnect();
  return received;
}

describe('a record that cannot be read', () => {
  it('is skipped and dead-lettered while the rest of its partition is processed', async () => {
    const producer = kafka.producer();
    await producer.connect();
    // One partition, in this order: spans, garbage, a tombstone, spans. Then a foreign record on
    // the attempts topic and two on the incidents topic: not JSON, and a routing event of a type
    // keyscope does not infer.
    await producer.send({
      topic: cluster.topic('traces'),
      messages: [
        { partition: 0, value: Buffer.from(encodeTraces(spans.slice(0, half))) },
        { partition: 0, value: POISON, headers: { origin: 'test' } },
        { partition: 0, value: null },
        { partition: 0, value: Buffer.from(encodeTraces(spans.slice(half))) },
      ],
    });
    await producer.send({
      topic: cluster.topic('attempts'),
      messages: [{ partition: 0, key: 'k', value: Buffer.from('{"v":1,"attempt":{"kind":"server"}}') }],
    });
    await producer.send({
      topic: cluster.topic('incidents'),
      messages: [
        { key: 'finding/x', value: Buffer.from('not json') },
        {
          key: 'routing-event/re_x',
          value: Buffer.from(JSON.stringify({ v: 1, routingEvent: { id: 're_x', type: 'reboot' } })),
        },
      ],
    });
    await producer.disconnect();

    const api = `http://127.0.0.1:${keyscope.addresses.api.port}`;
    expect(await outcomeWhenEqual(api, expected, 60_000)).toEqual(expected);

    const copies = await deadLetters(4, 30_000);
    const sources = copies.map(
      (copy) => `${copy.headers['keyscope-error']} ${copy.headers['keyscope-source-topic']}`,
    );
    expect(sources.sort()).toEqual(
      [
        `KS_KAFKA_RECORD_INVALID ${cluster.topic('attempts')}`,
        `KS_KAFKA_RECORD_INVALID ${cluster.topic('incidents')}`,
        `KS_KAFKA_RECORD_INVALID ${cluster.topic('incidents')}`,
        expect.stringMatching(new RegExp(`^KS_OTLP_[A-Z_]+ ${cluster.topic('traces')}$`)),
      ].sort(),
    );
    const traced = copies.find((copy) => copy.headers['keyscope-source-topic'] === cluster.topic('traces'))!;
    expect(traced.value).toEqual(POISON);
    expect(traced.headers).toMatchObject({
      origin: 'test',
      'keyscope-source-partition': '0',
      'keyscope-source-offset': '1',
    });

    const skipped = keyscope
      .counters!.snapshot()
      .skipped.map(({ topic, reason, count }) => `${reason} ${topic} ${count}`);
    expect(skipped).toContain(`empty_value ${cluster.topic('traces')} 1`);
    expect(skipped).toContain(`KS_KAFKA_RECORD_INVALID ${cluster.topic('incidents')} 2`);
    expect(skipped).toHaveLength(4);
    // Nothing of the foreign routing event reached the API.
    const events = (await (await fetch(`${api}/api/v1/routing-events`)).json()) as {
      items: { id: string }[];
    };
    expect(events.items.map((event) => event.id)).not.toContain('re_x');
  }, 120_000);
});
