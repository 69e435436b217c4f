import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { DetectorStats } from '@keyscope/detector';
import type { Admin, Consumer, Producer } from 'kafkajs';
import type { ServeConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { detectorConfigOf } from '../pipeline/detector-settings.ts';
import { ShutdownStack } from '../shutdown-stack.ts';
import { DeadLetters } from './dead-letters.ts';
import { DetectPartitions } from './detect-partitions.ts';
import { createConsumer, createKafkaClient } from './kafka-client.ts';
import type { KafkaCounters } from './kafka-counters.ts';
import { OffsetCommitter } from './offset-committer.ts';
import { PartitionBackoff } from './partition-backoff.ts';
import { PartitionDetector } from './partition-detector.ts';
import { type RunningRole, readMappingFile, runConsumer } from './running-role.ts';
import { ensureTopics, topicSpecs } from './topics.ts';

const TICK_MILLIS = 1_000;
const PURGE_MILLIS = 10_000;

export interface RunningDetect extends RunningRole {
  /** The partitions this instance owns and has positioned, for tests and /metrics. */
  partitions(): number[];
  /** Its partitions' detectors, summed, for /metrics. */
  detectorStats(): DetectorStats;
}

/**
 * The detect role: a consumer group on the attempts topic. Each assigned partition has its own
 * detector and SQLite file under `kafka.stateDir`; its findings and incidents go to the compacted
 * incidents topic. A partition's offset is committed only after the state covering it is
 * committed to SQLite and the records publishing it are acknowledged by Kafka.
 *
 * On assignment a partition resumes from its own file when this instance was the last to work on
 * it (the group's committed offset is not past the file's applied offset); otherwise the file is
 * discarded and the state rebuilt by reading the topic again from its oldest record (the topic
 * keeps one retry horizon), skipping records older than the horizon.
 */
export async function startDetectRole(
  config: ServeConfig,
  dependencies: { logger: Logger; counters: KafkaCounters; now?: () => number },
): Promise<RunningDetect> {
  const { logger, counters } = dependencies;
  const now = dependencies.now ?? Date.now;
  const kafkaConfig = config.kafka;
  const topic = kafkaConfig.attempts.topic;
  const groupId = kafkaConfig.attempts.groupId;
  const mapping = await readMappingFile(config.mapping.file);
  const detectorConfig = detectorConfigOf(config.detector, mapping);
  const kafka = createKafkaClient(kafkaConfig, 'detect', logger);
  const partitionCounts = await ensureTopics(
    kafka,
    topicSpecs(config, ['attempts', 'incidents', 'deadLetter']),
    kafkaConfig,
    logger,
  );
  mkdirSync(kafkaConfig.stateDir, { recursive: true });
  forgetStaleStates(kafkaConfig.stateDir, now() - detectorConfig.retryHorizonMillis, logger);

  const stops = new ShutdownStack();
  try {
    const producer: Producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    stops.push(() => producer.disconnect());
    const admin: Admin = kafka.admin();
    await admin.connect();
    stops.push(() => admin.disconnect());
    const consumer: Consumer = createConsumer(kafka, kafkaConfig, groupId);
    const backoff = new PartitionBackoff(consumer, topic, counters, logger, 'detect');
    const committer = new OffsetCommitter(consumer, topic);
    const partitions = new DetectPartitions({
      topic,
      groupId,
      incidentsTopic: kafkaConfig.incidents.topic,
      incidentsPartitions: partitionCounts.get(kafkaConfig.incidents.topic) ?? 1,
      stateDir: kafkaConfig.stateDir,
      detectorConfig,
      retentionMillis: config.retention.findingsDays * 24 * 60 * 60 * 1000,
      now,
      consumer,
      admin,
      producer,
      backoff,
      committer,
      deadLetters: new DeadLetters({
        producer,
        topic: kafkaConfig.deadLetter.topic,
        counters,
        logger,
        role: 'detect',
      }),
      counters,
      logger,
    });
    consumer.on(consumer.events.GROUP_JOIN, (event) =>
      partitions.assign(event.payload.memberAssignment[topic] ?? []),
    );

    await consumer.connect();
    stops.push(() => consumer.disconnect());
    await consumer.subscribe({ topic, fromBeginning: true });
    const running = await runConsumer(
      consumer,
      {
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 8,
        eachBatch: (payload) => partitions.consume(payload),
      },
      { role: 'detect', logger },
    );
    stops.push(async () => {
      backoff.stop();
      // While still a group member: a stopped consumer cannot commit. A batch finishing after
      // this is delivered again to the next owner, where it is a no-op.
      await committer.stop();
      await running.stop();
      await partitions.close();
    });

    const tick = setInterval(() => partitions.tick(), TICK_MILLIS);
    const purge = setInterval(() => partitions.purge(), PURGE_MILLIS);
    tick.unref();
    purge.unref();
    stops.push(() => {
      clearInterval(tick);
      clearInterval(purge);
    });
    logger.info(`detect consuming ${topic} as ${groupId}, state in ${kafkaConfig.stateDir}`);

    return {
      failed: running.failed,
      partitions: () => partitions.ready(),
      detectorStats: () => partitions.stats(),
      stop() {
        return stops.stop();
      },
    };
  } catch (error) {
    await stops.stop();
    throw error;
  }
}

/** Files of partitions this instance has not touched for a retry horizon would be rebuilt anyway. */
function forgetStaleStates(dir: string, beforeUnixMillis: number, logger: Logger): void {
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.db')) continue;
    const path = join(dir, name);
    if (statSync(path).mtimeMs < beforeUnixMillis) {
      PartitionDetector.remove(path);
      logger.info(`detect: removed stale partition state ${path}`);
    }
  }
}
