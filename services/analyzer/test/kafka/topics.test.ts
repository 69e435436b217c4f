import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KafkaCluster, startKafkaCluster } from '../../../../test/kafka/support/kafka-cluster.ts';
import { resolveServeConfig } from '../../src/config.ts';
import { createKafkaClient } from '../../src/kafka/kafka-client.ts';
import { startRoles } from '../../src/kafka/start-roles.ts';
import { ensureTopics } from '../../src/kafka/topics.ts';
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
