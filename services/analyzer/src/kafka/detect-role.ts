import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type DetectorConfig, defaultDetectorConfig } from '@keyscope/detector';
import type { Admin, Consumer, EachBatchPayload, Producer } from 'kafkajs';
import type { ServeConfig } from '../config.ts';
import type { Logger } from '../logger.ts';
import { ShutdownStack } from '../shutdown-stack.ts';
import { type AttemptsRecord, decodeAttemptsRecord } from './attempt-records.ts';
import { sendInChunks } from './chunked-send.ts';
import { DeadLetters, unreadableRecord } from './dead-letters.ts';
import { encodeIncidentRecord } from './incident-records.ts';
import { attemptsTopicSpec, deadLetterTopicSpec } from './ingest-role.ts';
import { createConsumer, createKafkaClient } from './kafka-client.ts';
import type { KafkaCounters } from './kafka-counters.ts';
import { OffsetCommitter } from './offset-committer.ts';
import { PartitionBackoff } from './partition-backoff.ts';
import { PartitionDetector } from './partition-detector.ts';
import { type RunningRole, readMappingFile, runConsumer } from './running-role.ts';
import { ensureTopics, type TopicSpec } from './topics.ts';

const TICK_MILLIS = 1_000;
const PURGE_MILLIS = 10_000;

export interface RunningDetect extends RunningRole {
  /** The partitions this instance owns and has positioned, for tests and /metrics. */
  partitions(): number[];
}

/**
 * A partition this instance was assigned. Work on it (a batch, a tick, opening, closing) runs one
 * piece at a time through `queue`, in arrival order, so a rebalance never closes a state that a
 * batch is still writing.
 */
interface Slot {
  readonly partition: number;
  detector: PartitionDetector | undefined;
  /** False until the state is open and the consumer positioned; batches before that are refetched. */
  ready: boolean;
  /** Set when the slot was revoked; queued work then does nothing. */
  closed: boolean;
  /** The offset a gap made this slot seek back to once; a second gap there is accepted. */
  seekedBackTo?: number;
  queue: Promise<void>;
  /**
   * Records read but not applied yet: while the partition has a backlog, fetched batches are
   * gathered up to APPLY_RECORDS and applied in one transaction (see eachBatch). Not committed, so
   * a crash or a revocation only means they are read again.
   */
  deferred: { offset: number; record: AttemptsRecord }[];
  /** The last offset the deferred records cover (-1 when none are deferred). */
  deferredThrough: number;
}

/**
 * Records applied together at most, while a partition has a backlog. A fetch may return only a few
 * records per partition (librdkafka's mock broker returns about ten), and applying each batch in a
 * transaction of its own cost ~1 ms of commit for every ten attempts.
 */
const APPLY_RECORDS = 2_000;

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
  const detectorConfig: DetectorConfig = Object.freeze({
    ...defaultDetectorConfig(),
    ...config.detector,
    keyNamespace: mapping.keyNamespace,
  });
  const horizonMillis = detectorConfig.retryHorizonMillis;
  const retentionMillis = config.retention.findingsDays * 24 * 60 * 60 * 1000;
  const kafka = createKafkaClient(kafkaConfig, 'detect', logger);
  const specs: TopicSpec[] = [attemptsTopicSpec(config), incidentsTopicSpec(config)];
  if (kafkaConfig.deadLetter.topic !== '') specs.push(deadLetterTopicSpec(config));
  await ensureTopics(kafka, specs, kafkaConfig, logger);
  mkdirSync(kafkaConfig.stateDir, { recursive: true });
  forgetStaleStates(kafkaConfig.stateDir, now() - horizonMillis, logger);

  const stops = new ShutdownStack();
  const slots = new Map<number, Slot>();
  /**
   * The work still queued on revoked slots, by partition: a slot given the partition again starts
   * after it, so two slots never hold the same state file at once.
   */
  const retiring = new Map<number, Promise<void>>();
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
    const deadLetters = new DeadLetters({
      producer,
      topic: kafkaConfig.deadLetter.topic,
      counters,
      logger,
      role: 'detect',
    });
    const pathOf = (partition: number) => join(kafkaConfig.stateDir, `${topic}-${partition}.db`);

    const enqueue = (slot: Slot, work: () => Promise<void> | void): Promise<void> => {
      const next = slot.queue.then(work);
      slot.queue = next.catch((error) => {
        if (!slot.closed) backoff.failed(slot.partition, error);
      });
      return slot.queue;
    };

    /** Sends what the state committed but Kafka has not acknowledged yet. */
    const flush = async (detector: PartitionDetector) => {
      const pending = detector.pending();
      if (pending.length === 0) return;
      await sendInChunks(
        producer,
        kafkaConfig.incidents.topic,
        pending.map((record) => encodeIncidentRecord(record)),
        counters,
      );
      detector.delivered(pending.length);
    };

    const committedOffset = async (partition: number): Promise<number> => {
      const [entry] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const offset = entry?.partitions.find((p) => p.partition === partition)?.offset ?? '-1';
      return Number(offset);
    };

    /** Opens (or rebuilds) the partition's state and moves the consumer to where it continues. */
    const position = async (slot: Slot) => {
      if (slot.closed) return;
      const partition = slot.partition;
      const path = pathOf(partition);
      const committed = await committedOffset(partition);
      if (slot.detector === undefined && existsSync(path)) {
        slot.detector = new PartitionDetector({ path, partition, detectorConfig, retentionMillis, now });
      }
      const local = slot.detector;
      if (local !== undefined) {
        const applied = local.appliedOffset;
        const current =
          applied >= 0 &&
          (committed < 0 || committed <= applied + 1) &&
          local.appliedUnixMillis >= now() - horizonMillis;
        if (!current) {
          local.close();
          PartitionDetector.remove(path);
          slot.detector = undefined;
        }
      }
      let from: number;
      if (slot.detector !== undefined) {
        await flush(slot.detector);
        from = slot.detector.appliedOffset + 1;
        counters.resumes++;
        logger.info(`detect: ${topic}[${partition}] resumes from its state at offset ${from}`);
      } else {
        slot.detector = new PartitionDetector({ path, partition, detectorConfig, retentionMillis, now });
        const offsets = await admin.fetchTopicOffsets(topic);
        from = Number(offsets.find((p) => p.partition === partition)?.low ?? 0);
        counters.rebuilds++;
        logger.info(`detect: ${topic}[${partition}] rebuilds its state from offset ${from}`);
      }
      if (slot.closed) return;
      consumer.seek({ topic, partition, offset: String(from) });
      slot.ready = true;
      backoff.resume(partition);
    };

    /** Positioning needs the brokers (committed and oldest offsets): retried until it works or the slot goes. */
    const positionPatiently = async (slot: Slot) => {
      for (let delay = 250; !slot.closed; delay = Math.min(delay * 2, 10_000)) {
        try {
          await position(slot);
          return;
        } catch (error) {
          logger.error(
            `detect: cannot position ${topic}[${slot.partition}], retrying in ${delay} ms: ${(error as Error).message}`,
          );
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    };

    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      const assigned = new Set(event.payload.memberAssignment[topic] ?? []);
      for (const [partition, slot] of slots) {
        if (assigned.has(partition)) continue;
        slots.delete(partition);
        slot.closed = true;
        slot.ready = false;
        const closed = enqueue(slot, () => {
          slot.detector?.close();
          slot.detector = undefined;
        });
        retiring.set(partition, closed);
        void closed.then(() => {
          if (retiring.get(partition) === closed) retiring.delete(partition);
        });
      }
      for (const partition of assigned) {
        let slot = slots.get(partition);
        if (slot === undefined) {
          const queue = retiring.get(partition) ?? Promise.resolve();
          slot = {
            partition,
            detector: undefined,
            ready: false,
            closed: false,
            queue,
            deferred: [],
            deferredThrough: -1,
          };
          slots.set(partition, slot);
        }
        // Every join makes kafkajs start again from the committed offset, which may trail the
        // state: hold the partition until it is positioned where its state continues.
        slot.ready = false;
        backoff.pause(partition);
        const current = slot;
        void enqueue(current, () => {
          // Deferred records are read again from where the state continues.
          current.deferred = [];
          current.deferredThrough = -1;
          return positionPatiently(current);
        });
      }
      counters.partitionsOwned = slots.size;
    });

    const eachBatch = async ({ batch, resolveOffset, isRunning, isStale }: EachBatchPayload) => {
      const partition = batch.partition;
      const slot = slots.get(partition);
      if (slot === undefined || !slot.ready || !isRunning() || isStale()) return;
      await enqueue(slot, async () => {
        const detector = slot.detector;
        if (!slot.ready || slot.closed || detector === undefined) return;
        // A batch must continue the state (and what is deferred): one that starts past the next
        // offset (fetched from a position set before this slot's seek) would skip attempts. Seek
        // back once; if the records in between are gone (retention), the same gap comes back and is
        // accepted.
        // Deferred batches may hold no records at all (all older than the horizon): their offsets count.
        const covered = slot.deferredThrough >= 0 ? slot.deferredThrough : detector.appliedOffset;
        const expected = covered + 1;
        const first = Number(batch.messages[0]?.offset ?? batch.lastOffset());
        if (covered >= 0 && first > expected) {
          if (slot.seekedBackTo !== expected) {
            slot.seekedBackTo = expected;
            consumer.seek({ topic, partition, offset: String(expected) });
            return;
          }
          logger.error(
            `detect: ${topic}[${partition}] offsets ${expected} to ${first - 1} no longer exist (retention); continuing at ${first}`,
          );
        }
        const oldest = now() - horizonMillis;
        const records = slot.deferred;
        for (const message of batch.messages) {
          const offset = Number(message.offset);
          if (offset <= covered) continue;
          counters.count(counters.consumed, topic);
          if (Number(message.timestamp) < oldest) {
            counters.rebuildSkipped++;
            continue;
          }
          try {
            records.push({ offset, record: decodeAttemptsRecord(message.value) });
          } catch (error) {
            await deadLetters.record(unreadableRecord(topic, partition, message), error);
          }
        }
        const last = Math.max(Number(batch.lastOffset()), covered);
        slot.deferredThrough = last;
        // The next fetch starts after this batch either way; its offset is committed only once applied.
        resolveOffset(batch.lastOffset());
        const backlog = Number(batch.offsetLag()) > 0;
        if (backlog && records.length < APPLY_RECORDS) return;
        slot.deferred = [];
        slot.deferredThrough = -1;
        await flush(detector);
        counters.attemptsDetected += detector.apply(records, last);
        counters.detectTransactions++;
        await flush(detector);
        backoff.succeeded(partition);
        committer.mark(partition, last + 1);
      });
    };

    await consumer.connect();
    stops.push(() => consumer.disconnect());
    await consumer.subscribe({ topic, fromBeginning: true });
    const running = await runConsumer(
      consumer,
      { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 8, eachBatch },
      { role: 'detect', logger },
    );
    stops.push(async () => {
      backoff.stop();
      // While still a group member: a stopped consumer cannot commit. A batch finishing after
      // this is delivered again to the next owner, where it is a no-op.
      await committer.stop();
      await running.stop();
      for (const slot of slots.values()) {
        slot.closed = true;
        await slot.queue;
        slot.detector?.close();
      }
      slots.clear();
      await Promise.all(retiring.values());
    });

    const everySlot = (work: (slot: Slot, detector: PartitionDetector) => Promise<void> | void) => {
      for (const slot of slots.values()) {
        if (!slot.ready || backoff.waiting(slot.partition)) continue;
        void enqueue(slot, () => {
          if (slot.ready && !slot.closed && slot.detector !== undefined) return work(slot, slot.detector);
        });
      }
    };
    const tick = setInterval(
      () =>
        everySlot(async (_slot, detector) => {
          detector.tick(now());
          await flush(detector);
        }),
      TICK_MILLIS,
    );
    const purge = setInterval(() => everySlot((_slot, detector) => detector.purge(now())), PURGE_MILLIS);
    tick.unref();
    purge.unref();
    stops.push(() => {
      clearInterval(tick);
      clearInterval(purge);
    });
    logger.info(`detect consuming ${topic} as ${groupId}, state in ${kafkaConfig.stateDir}`);

    return {
      failed: running.failed,
      partitions: () =>
        [...slots.values()]
          .filter((slot) => slot.ready)
          .map((slot) => slot.partition)
          .sort((a, b) => a - b),
      stop() {
        return stops.stop();
      },
    };
  } catch (error) {
    await stops.stop();
    throw error;
  }
}

export function incidentsTopicSpec(config: ServeConfig): TopicSpec {
  return {
    topic: config.kafka.incidents.topic,
    partitions: config.kafka.incidents.partitions,
    // Compaction keeps the latest record per key: the topic is the current set of findings and
    // incident parts, whatever its age, which a new serve instance reads in full.
    settings: { 'cleanup.policy': 'compact' },
    purpose: 'findings and incidents, compacted',
  };
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
