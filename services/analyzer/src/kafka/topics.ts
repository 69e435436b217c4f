import { KeyscopeError } from '@keyscope/errors';
import type { Kafka } from 'kafkajs';
import type { KafkaConfig, ServeConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { KAFKA_TOPIC_MISSING } from './kafka-errors.ts';

export interface TopicSpec {
  readonly topic: string;
  /** Used only when keyscope creates the topic. */
  readonly partitions: number;
  /** Topic-level settings for creation, e.g. `cleanup.policy: compact`. */
  readonly settings?: Readonly<Record<string, string>>;
  /** Why keyscope needs it, for the error message. */
  readonly purpose: string;
}

/** The topics keyscope's roles read and write, by their name in `kafka.*`. */
export type TopicName = 'traces' | 'attempts' | 'incidents' | 'deadLetter';

/**
 * The specs of the named topics, in the order named, as the config sets them. The traces and
 * dead-letter topics are optional (configured as ''): a topic turned off is left out.
 */
export function topicSpecs(
  config: Pick<ServeConfig, 'kafka' | 'detector'>,
  names: readonly TopicName[],
): TopicSpec[] {
  const specs: TopicSpec[] = [];
  for (const name of names) {
    const spec = topicSpec(config, name);
    if (spec.topic !== '') specs.push(spec);
  }
  return specs;
}

function topicSpec(config: Pick<ServeConfig, 'kafka' | 'detector'>, name: TopicName): TopicSpec {
  const kafka = config.kafka;
  switch (name) {
    case 'traces':
      return {
        topic: kafka.traces.topic,
        partitions: kafka.attempts.partitions,
        purpose: "the Collector kafka exporter's traces",
      };
    case 'attempts':
      // Deleted after one retry horizon (plus an hour of slack): what a rebuilding detector reads back.
      return {
        topic: kafka.attempts.topic,
        partitions: kafka.attempts.partitions,
        settings: {
          'cleanup.policy': 'delete',
          'retention.ms': String(config.detector.retryHorizonMillis + 60 * 60 * 1000),
        },
        purpose: 'attempts keyed by idempotency key',
      };
    case 'incidents':
      return {
        topic: kafka.incidents.topic,
        partitions: kafka.incidents.partitions,
        // Compaction keeps the latest record per key: the topic is the current set of findings and
        // incident parts, whatever its age, which a new serve instance reads in full.
        settings: { 'cleanup.policy': 'compact' },
        purpose: 'findings and incidents, compacted',
      };
    case 'deadLetter':
      return { topic: kafka.deadLetter.topic, partitions: 1, purpose: 'unreadable records' };
  }
}

/**
 * Makes sure every topic exists before a role starts consuming or producing, and returns each
 * topic's partition count. Existence is checked with a plain topic listing: a metadata request for
 * one named topic would make brokers with auto-creation (and the mock broker) create it silently,
 * with their default partitions and without the compaction the incidents topic needs.
 */
export async function ensureTopics(
  kafka: Kafka,
  specs: readonly TopicSpec[],
  config: Pick<KafkaConfig, 'createTopics' | 'replicationFactor'>,
  logger: Logger,
): Promise<Map<string, number>> {
  const admin = kafka.admin({ retry: { retries: 2, initialRetryTime: 200, maxRetryTime: 2_000 } });
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((spec) => !existing.has(spec.topic));
    if (missing.length > 0 && config.createTopics) {
      let refusal = '';
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((spec) => ({
            topic: spec.topic,
            numPartitions: spec.partitions,
            replicationFactor: config.replicationFactor,
            configEntries: Object.entries(spec.settings ?? {}).map(([name, value]) => ({ name, value })),
          })),
        });
      } catch (error) {
        refusal = (error as Error).message;
      }
      const now = new Set(await admin.listTopics());
      for (const spec of missing) {
        if (now.has(spec.topic)) {
          logger.info(`kafka: created topic ${spec.topic} with ${spec.partitions} partitions`);
          continue;
        }
        throw new KeyscopeError(
          KAFKA_TOPIC_MISSING,
          `kafka topic ${spec.topic} (${spec.purpose}) does not exist and could not be created` +
            `${refusal === '' ? '' : ` (the broker answered: ${refusal})`}; create it with ` +
            `${spec.partitions} partitions${describeSettings(spec)}, or give keyscope the right to (ACL CreateTopics)`,
        );
      }
    } else if (missing.length > 0) {
      const spec = missing[0]!;
      throw new KeyscopeError(
        KAFKA_TOPIC_MISSING,
        `kafka topic ${spec.topic} (${spec.purpose}) does not exist and kafka.createTopics is false; create it with ` +
          `${spec.partitions} partitions${describeSettings(spec)}`,
      );
    }
    const metadata = await admin.fetchTopicMetadata({ topics: specs.map((spec) => spec.topic) });
    return new Map(metadata.topics.map((topic) => [topic.name, topic.partitions.length]));
  } finally {
    await admin.disconnect();
  }
}

function describeSettings(spec: TopicSpec): string {
  const entries = Object.entries(spec.settings ?? {});
  return entries.length === 0 ? '' : ` and ${entries.map(([name, value]) => `${name}=${value}`).join(', ')}`;
}
