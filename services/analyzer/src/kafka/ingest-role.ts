import { type Attempt, extractAttempts, mappingDecodeOptions } from '@keyscope/attempts';
import type { Consumer, EachBatchPayload, Producer } from 'kafkajs';
import type { ServeConfig } from '../config.ts';
import type { ListenAddress } from '../listen-address.ts';
import type { Logger } from '../logger.ts';
import { spanLimitsAt } from '../pipeline/span-window.ts';
import { type RunningReceivers, startReceivers } from '../receivers/start-receivers.ts';
import { ShutdownStack } from '../shutdown-stack.ts';
import type { ActivityEntry } from './attempt-records.ts';
import { AttemptsWriter } from './attempts-writer.ts';
import { DeadLetters, unreadableRecord } from './dead-letters.ts';
import { createConsumer, createKafkaClient } from './kafka-client.ts';
import type { KafkaCounters } from './kafka-counters.ts';
import { OffsetCommitter } from './offset-committer.ts';
import { PartitionBackoff } from './partition-backoff.ts';
import { type RunningRole, readMappingFile, runConsumer } from './running-role.ts';
import { ensureTopics, topicSpecs } from './topics.ts';
import { decodeTraceMessage } from './trace-messages.ts';

/**
 * Traces messages gathered per partition before their attempts are written, while the partition
 * has a backlog: a fetch may carry a single message per partition (librdkafka's mock broker hands
 * over one record batch), and every write waits for all in-sync replicas.
 */
const GATHER_MESSAGES = 64;

interface Gathered {
  /** The first offset read and not written. */
  readonly from: string;
  readonly attempts: Attempt[];
  readonly activity: ActivityEntry[];
  messages: number;
}

export interface RunningIngest extends RunningRole {
  readonly receivers: RunningReceivers;
  readonly addresses: { readonly otlpHttp: ListenAddress; readonly otlpGrpc: ListenAddress };
}

/**
 * The ingest role: the Collector's traces topic (consumer group `kafka.traces.groupId`) and the
 * OTLP receivers → attempts → the attempts topic. A traces message's offset is committed once its
 * attempts are acknowledged by Kafka, and what a crash makes it write twice is harmless downstream
 * (attempts are deduplicated by trace and span id, node activity by source offset). Its only state
 * is its writer's send linker (`AttemptsWriter.linkSends`), keyless sends and keys waiting for each
 * other: a restart forgets it, so a send whose server span was written before stays without its key.
 */
export async function startIngestRole(
  config: ServeConfig,
  dependencies: { logger: Logger; counters: KafkaCounters; now?: () => number },
): Promise<RunningIngest> {
  const { logger, counters } = dependencies;
  const kafkaConfig = config.kafka;
  const mapping = await readMappingFile(config.mapping.file);
  // Only the attributes the mapping reads are materialized, as in the embedded pipeline.
  const decodeOptions = mappingDecodeOptions(mapping);
  const kafka = createKafkaClient(kafkaConfig, 'ingest', logger);
  const partitions = await ensureTopics(
    kafka,
    topicSpecs(config, ['attempts', 'traces', 'deadLetter']),
    kafkaConfig,
    logger,
  );

  // Spans from OTLP and from the traces topic are held to the same window and limits as in the
  // embedded service: a span decades off would make the detectors reason about decades of activity.
  const limits = () =>
    spanLimitsAt(dependencies.now?.() ?? Date.now(), config.detector.retryHorizonMillis, config.spans);
  const stops = new ShutdownStack();
  try {
    const producer: Producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    stops.push(() => producer.disconnect());
    const writer = new AttemptsWriter({
      producer,
      topic: kafkaConfig.attempts.topic,
      partitions: partitions.get(kafkaConfig.attempts.topic)!,
      mapping,
      counters,
      limits,
    });

    const receivers = await startReceivers(config, { consumer: writer, decodeOptions, logger });
    stops.push(() => receivers.stop());

    let failed: Promise<never> = new Promise<never>(() => {});
    const topic = kafkaConfig.traces.topic;
    if (topic !== '') {
      const consumer: Consumer = createConsumer(kafka, kafkaConfig, kafkaConfig.traces.groupId);
      const backoff = new PartitionBackoff(consumer, topic, counters, logger, 'ingest');
      const deadLetters = new DeadLetters({
        producer,
        topic: kafkaConfig.deadLetter.topic,
        counters,
        logger,
        role: 'ingest',
      });
      const committer = new OffsetCommitter(consumer, topic);
      await consumer.connect();
      stops.push(() => consumer.disconnect());
      // A new group starts at the oldest retained traces: spans are evidence however late.
      await consumer.subscribe({ topic, fromBeginning: true });
      // Per partition, what was read but not written yet (see GATHER_MESSAGES). A rebalance makes
      // kafkajs read again from the committed offsets, so what is gathered is dropped then.
      const gathered = new Map<number, Gathered>();
      consumer.on(consumer.events.GROUP_JOIN, () => gathered.clear());
      const eachBatch = async ({ batch, resolveOffset, isRunning, isStale }: EachBatchPayload) => {
        if (!isRunning() || isStale() || backoff.waiting(batch.partition)) return;
        const partition = batch.partition;
        const first = batch.messages[0]?.offset ?? batch.lastOffset();
        const pending = gathered.get(partition) ?? { from: first, attempts: [], activity: [], messages: 0 };
        try {
          const source = `${topic}/${partition}`;
          for (const message of batch.messages) {
            counters.count(counters.consumed, topic);
            pending.messages++;
            const record = unreadableRecord(topic, partition, message);
            if (message.value === null || message.value.length === 0) {
              deadLetters.empty(record);
              continue;
            }
            let decoded: ReturnType<typeof decodeTraceMessage>;
            try {
              decoded = decodeTraceMessage(message.value, kafkaConfig.traces.encoding, decodeOptions);
            } catch (error) {
              await deadLetters.record(record, error);
              continue;
            }
            counters.spansDecoded += decoded.spanCount;
            // A message read again after a crash yields its attempts again, and the detectors'
            // attempt logs drop the copies.
            const extracted = extractAttempts(decoded.spans, mapping, limits());
            // Both sides of a trace come to one instance when the Collector partitions the topic by trace id.
            writer.linkSends(extracted);
            for (const [code, n] of Object.entries(extracted.refusals.byCode)) {
              counters.count(counters.spansRefused, code, n);
            }
            for (const attempt of extracted.attempts) pending.attempts.push(attempt);
            pending.activity.push({ source, offset: Number(message.offset), samples: extracted.activity });
          }
          // The next fetch continues after this batch; its offset is committed only once written.
          resolveOffset(batch.lastOffset());
          if (Number(batch.offsetLag()) > 0 && pending.messages < GATHER_MESSAGES) {
            gathered.set(partition, pending);
            return;
          }
          gathered.delete(partition);
          await writer.write(pending.attempts, pending.activity);
          counters.attemptWrites++;
          backoff.succeeded(partition);
          committer.mark(partition, Number(batch.lastOffset()) + 1);
        } catch (error) {
          // Read again from the first message not written.
          gathered.delete(partition);
          consumer.seek({ topic, partition, offset: pending.from });
          backoff.failed(partition, error);
        }
      };
      const running = await runConsumer(
        consumer,
        { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 4, eachBatch },
        { role: 'ingest', logger },
      );
      failed = running.failed;
      stops.push(async () => {
        backoff.stop();
        // While still a group member: a stopped consumer cannot commit. A batch finishing after
        // this is delivered again to the next owner, where it is a no-op.
        await committer.stop();
        await running.stop();
      });
      logger.info(
        `ingest consuming ${topic} (${kafkaConfig.traces.encoding}) as ${kafkaConfig.traces.groupId}`,
      );
    }

    return {
      receivers,
      addresses: receivers.addresses,
      failed,
      stop() {
        return stops.stop();
      },
    };
  } catch (error) {
    await stops.stop();
    throw error;
  }
}
