import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../../src/config.ts';
import { createKafkaClient } from '../../src/kafka/kafka-client.ts';
import { startRoles } from '../../src/kafka/start-roles.ts';
import { ensureTopics, topicSpecs } from '../../src/kafka/topics.ts';
import { silentLogger } from '../../src/logger.ts';

/** Against a broker that refuses CreateTopics (the mock): a missing topic is a clear startup error. */
const refusesCreateTopics = (process.env.KAFKA_BROKERS ?? '').trim() === '';

let cluster: KafkaCluster;
beforeAll(async () => {
  cluster = await startKafkaCluster({ attempts: 5, incidents: 2 });
}, 30_000);
afterAll(async () => {
  await cluster?.stop();
});

const kafka = () =>
  createKafkaClient({ brokers: cluster.brokers, clientId: 'topics-test' }, 'test', silentLogger);

describe('topics at startup', () => {
  it('are found with their partition counts', async () => {
    const partitions = await ensureTopics(
      kafka(),
      [
        { topic: cluster.topic('attempts'), partitions: 12, purpose: 'attempts' },
        { topic: cluster.topic('incidents'), partitions: 3, purpose: 'incidents' },
      ],
      { createTopics: false, replicationFactor: 1 },
      silentLogger,
    );
    expect(Object.fromEntries(partitions)).toEqual({
      [cluster.topic('attempts')]: 5,
      [cluster.topic('incidents')]: 2,
    });
  });

  it('stop startup with KS_KAFKA_TOPIC_MISSING naming a missing topic keyscope may not create', async () => {
    const missing = ensureTopics(
      kafka(),
      [{ topic: cluster.topic('nowhere'), partitions: 4, purpose: 'attempts keyed by idempotency key' }],
      { createTopics: false, replicationFactor: 1 },
      silentLogger,
    );
    await expect(missing).rejects.toMatchObject({
      code: 'KS_KAFKA_TOPIC_MISSING',
      message: expect.stringContaining(`${cluster.topic('nowhere')} (attempts keyed by idempotency key)`),
    });
  });

  it.skipIf(!refusesCreateTopics)(
    'stop a role with KS_KAFKA_TOPIC_MISSING when the broker refuses to create its topic',
    async () => {
      const config = resolveServeConfig({
        role: 'serve',
        api: { port: 0 },
        db: { path: ':memory:' },
        kafka: {
          brokers: cluster.brokers,
          incidents: { topic: cluster.topic('not-created'), partitions: 3 },
        },
      });
      await expect(startRoles(config, { logger: silentLogger })).rejects.toMatchObject({
        code: 'KS_KAFKA_TOPIC_MISSING',
        message: expect.stringMatching(
          new RegExp(
            `${cluster.topic('not-created')} .*could not be created.*create it with 3 partitions and cleanup.policy=compact`,
          ),
        ),
      });
    },
    30_000,
  );
});

describe('the topics a role needs', () => {
  const config = resolveServeConfig({
    kafka: {
      brokers: ['127.0.0.1:9092'],
      traces: { topic: 'spans' },
      attempts: { topic: 'attempts', partitions: 12 },
      incidents: { topic: 'incidents', partitions: 3 },
      deadLetter: { topic: 'unreadable' },
    },
    detector: { retryHorizonMillis: 2 * 60 * 60 * 1000 },
  });

  it('keep attempts for one retry horizon and an hour, and compact incidents', () => {
    expect(topicSpecs(config, ['attempts', 'incidents'])).toEqual([
      {
        topic: 'attempts',
        partitions: 12,
        settings: { 'cleanup.policy': 'delete', 'retention.ms': String(3 * 60 * 60 * 1000) },
        purpose: 'attempts keyed by idempotency key',
      },
      {
        topic: 'incidents',
        partitions: 3,
        settings: { 'cleanup.policy': 'compact' },
        purpose: 'findings and incidents, compacted',
      },
    ]);
  });

  it('give the traces topic, when keyscope creates it, as many partitions as the attempts topic', () => {
    expect(topicSpecs(config, ['traces', 'deadLetter'])).toEqual([
      { topic: 'spans', partitions: 12, purpose: "the Collector kafka exporter's traces" },
      { topic: 'unreadable', partitions: 1, purpose: 'unreadable records' },
    ]);
  });

  it('leave out the traces and dead-letter topics when they are turned off', () => {
    const off = resolveServeConfig({ kafka: { traces: { topic: '' }, deadLetter: { topic: '' } } });
    expect(
      topicSpecs(off, ['attempts', 'traces', 'deadLetter', 'incidents']).map((spec) => spec.topic),
    ).toEqual(['keyscope_attempts', 'keyscope_incidents']);
  });
});
