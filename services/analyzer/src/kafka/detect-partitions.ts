import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DetectorConfig, DetectorStats } from '@keyscope/detector';
import type { Admin, Batch, Consumer, EachBatchPayload, Producer } from 'kafkajs';
import type { Logger } from '../logger.ts';
import { REGROUP_STEP_KEYS } from '../pipeline/stored-detector.ts';
import { type AttemptsRecord, decodeAttemptsRecord } from './attempt-records.ts';
import { sendInChunks } from './chunked-send.ts';
import { type DeadLetters, unreadableRecord } from './dead-letters.ts';
import { encodeIncidentRecord } from './incident-records.ts';
import type { KafkaCounters } from './kafka-counters.ts';
import type { OffsetCommitter } from './offset-committer.ts';
import type { PartitionBackoff } from './partition-backoff.ts';
import { PartitionDetector } from './partition-detector.ts';
import {
  assigned,
  closed,
  heldDetector,
  holding,
  isOwned,
  type PartitionState,
  positioned,
  readyDetector,
  revoked,
} from './partition-lifecycle.ts';

/**
 * Records applied together at most, while a partition has a backlog. A fetch may return only a few
 * records per partition (librdkafka's mock broker returns about ten), and applying each batch in a
 * transaction of its own cost ~1 ms of commit for every ten attempts.
 */
const APPLY_RECORDS = 2_000;

/**
 * A partition this instance was assigned. Work on it (positioning, a batch, a tick, closing) runs
 * one piece at a time through `queue`, in arrival order, so a rebalance never closes a state that
 * a batch is still writing.
 */
interface Slot {
  readonly partition: number;
  state: PartitionState<PartitionDetector>;
  queue: Promise<void>;
  /**
   * Records read but not applied yet: while the partition has a backlog, fetched batches are
   * gathered up to APPLY_RECORDS and applied in one transaction. Not committed, so a crash or a
   * revocation only means they are read again.
   */
  deferred: { offset: number; record: AttemptsRecord }[];
  /** The last offset the deferred records cover (-1 when none are deferred). */
  deferredThrough: number;
  /** Whether a step of regrouping is queued (DetectPartitions.tick). */
  regroupQueued: boolean;
  /** The offset a gap made this slot seek back to once; a second gap there is accepted. */
  seekedBackTo?: number;
  /**
   * The partition's last offset when it was positioned: once the state has applied it, the
   * takeover is published (PartitionDetector.publishTakeover). Undefined once published.
   */
  takeoverThrough?: number;
}

export interface DetectPartitionsOptions {
  /** The attempts topic and the detect role's group on it. */
  readonly topic: string;
  readonly groupId: string;
  readonly incidentsTopic: string;
  /**
   * The incidents topic's partition count: every record of attempts partition p goes to incidents
   * partition p modulo it, so the serve role reads one partition's records in order.
   */
  readonly incidentsPartitions: number;
  /** Where each partition's SQLite file lives, `<topic>-<partition>.db`. */
  readonly stateDir: string;
  readonly detectorConfig: DetectorConfig;
  readonly retentionMillis: number;
  readonly now: () => number;
  readonly consumer: Consumer;
  readonly admin: Admin;
  readonly producer: Producer;
  readonly backoff: PartitionBackoff;
  readonly committer: OffsetCommitter;
  readonly deadLetters: DeadLetters;
  readonly counters: KafkaCounters;
  readonly logger: Logger;
}

/**
 * The attempts partitions a detect instance owns, each through its lifecycle
 * (partition-lifecycle.ts): positioned on every join, fed batches once ready, closed on revocation.
 * A partition's offset is marked for commit only after the state covering it is committed to
 * SQLite and the records publishing it are acknowledged by Kafka.
 */
export class DetectPartitions {
  readonly #options: DetectPartitionsOptions;
  readonly #slots = new Map<number, Slot>();
  /**
   * The work still queued on revoked slots, by partition: a slot given the partition again starts
   * after it, so two slots never hold the same state file at once.
   */
  readonly #retiring = new Map<number, Promise<void>>();

  constructor(options: DetectPartitionsOptions) {
    this.#options = options;
  }

  /** A join's assignment: partitions not in it are revoked, those in it are positioned. */
  assign(assignment: readonly number[]): void {
    const assignedNow = new Set(assignment);
    for (const slot of this.#slots.values()) {
      if (!assignedNow.has(slot.partition)) this.#revoke(slot);
    }
    for (const partition of assignedNow) {
      let slot = this.#slots.get(partition);
      if (slot === undefined) {
        slot = {
          partition,
          state: assigned(),
          queue: this.#retiring.get(partition) ?? Promise.resolve(),
          deferred: [],
          deferredThrough: -1,
          regroupQueued: false,
        };
        this.#slots.set(partition, slot);
      } else {
        slot.state = assigned(slot.state);
      }
      // Every join makes kafkajs start again from the committed offset, which may trail the
      // state: hold the partition until it is positioned where its state continues.
      this.#options.backoff.pause(partition);
      const current = slot;
      void this.#enqueue(current, () => {
        // Deferred records are read again from where the state continues.
        current.deferred = [];
        current.deferredThrough = -1;
        return this.#positionPatiently(current);
      });
    }
    this.#options.counters.partitionsOwned = this.#slots.size;
  }

  /** kafkajs's eachBatch: a batch of a ready partition is applied in its turn; others are fetched again. */
  async consume({ batch, resolveOffset, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const slot = this.#slots.get(batch.partition);
    if (slot === undefined || slot.state.phase !== 'ready' || !isRunning() || isStale()) return;
    await this.#enqueue(slot, () => this.#applyBatch(slot, batch, resolveOffset));
  }

  /**
   * Every ready partition's detector regroups, resolves quiet incidents and expires state; what
   * changed is published. The keys a changed routing event judges again are judged in steps of
   * REGROUP_STEP_KEYS, each queued behind the partition's batches on a later turn of the event
   * loop, so an incident of thousands of keys holds neither the partition nor the process.
   */
  tick(): void {
    this.#everyReady(async (detector, slot) => {
      detector.tick(this.#options.now(), { maxRegroupedKeys: 0 });
      await this.#flush(detector);
      if (detector.detector.regroupedKeys() > 0) this.#regroupLater(slot);
    });
  }

  /** Queues the next step of a partition's regrouping, unless one is queued already. */
  #regroupLater(slot: Slot): void {
    if (slot.regroupQueued) return;
    slot.regroupQueued = true;
    setImmediate(() => {
      void this.#enqueue(slot, async () => {
        slot.regroupQueued = false;
        const detector = readyDetector(slot.state);
        // A partition in backoff or gone keeps its keys waiting for the next tick (or drops them).
        if (detector === undefined || this.#options.backoff.waiting(slot.partition)) return;
        const more = detector.judgeRegrouped(REGROUP_STEP_KEYS);
        await this.#flush(detector);
        if (more) this.#regroupLater(slot);
      });
    });
  }

  /** Every ready partition's detector drops what it keeps past retention. */
  purge(): void {
    this.#everyReady((detector) => detector.purge(this.#options.now()));
  }

  /**
   * The ready partitions' detectors, summed (the newest watermark of them): what this instance's
   * /metrics shows, hot keys included.
   */
  stats(): DetectorStats {
    return sumDetectorStats(
      [...this.#slots.values()].flatMap((slot) => {
        const detector = readyDetector(slot.state);
        return detector === undefined ? [] : [detector.detector.stats()];
      }),
    );
  }

  /** The partitions this instance owns and has positioned, ascending. */
  ready(): number[] {
    return [...this.#slots.values()]
      .filter((slot) => slot.state.phase === 'ready')
      .map((slot) => slot.partition)
      .sort((a, b) => a - b);
  }

  /** Closes every partition once its queued work is done; call after the consumer stopped. */
  async close(): Promise<void> {
    for (const slot of this.#slots.values()) {
      slot.state = revoked(slot.state);
      await slot.queue;
      this.#closeState(slot);
    }
    this.#slots.clear();
    await Promise.all(this.#retiring.values());
  }

  #enqueue(slot: Slot, work: () => Promise<void> | void): Promise<void> {
    const next = slot.queue.then(work);
    slot.queue = next.catch((error) => {
      if (isOwned(slot.state)) this.#options.backoff.failed(slot.partition, error);
    });
    return slot.queue;
  }

  #revoke(slot: Slot): void {
    const partition = slot.partition;
    this.#slots.delete(partition);
    slot.state = revoked(slot.state);
    const closing = this.#enqueue(slot, () => this.#closeState(slot));
    this.#retiring.set(partition, closing);
    void closing.then(() => {
      if (this.#retiring.get(partition) === closing) this.#retiring.delete(partition);
    });
  }

  #closeState(slot: Slot): void {
    heldDetector(slot.state)?.close();
    slot.state = closed(slot.state);
  }

  #everyReady(work: (detector: PartitionDetector, slot: Slot) => Promise<void> | void): void {
    for (const slot of this.#slots.values()) {
      if (slot.state.phase !== 'ready' || this.#options.backoff.waiting(slot.partition)) continue;
      void this.#enqueue(slot, () => {
        const detector = readyDetector(slot.state);
        if (detector !== undefined) return work(detector, slot);
      });
    }
  }

  /** Positioning needs the brokers (committed and oldest offsets): retried until it works or the slot goes. */
  async #positionPatiently(slot: Slot): Promise<void> {
    const { topic, logger } = this.#options;
    for (let delay = 250; isOwned(slot.state); delay = Math.min(delay * 2, 10_000)) {
      try {
        await this.#position(slot);
        return;
      } catch (error) {
        logger.error(
          `detect: cannot position ${topic}[${slot.partition}], retrying in ${delay} ms: ${(error as Error).message}`,
        );
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  /**
   * Opens the partition's state and moves the consumer to where it continues. The state is resumed
   * when this instance was the last to work on the partition (the group's committed offset is not
   * past the state's applied offset) within a retry horizon; otherwise it is discarded and rebuilt
   * from the topic's oldest record.
   */
  async #position(slot: Slot): Promise<void> {
    if (!isOwned(slot.state)) return;
    const { topic, consumer, admin, counters, logger, now } = this.#options;
    const partition = slot.partition;
    const path = join(this.#options.stateDir, `${topic}-${partition}.db`);
    const committed = await this.#committedOffset(partition);
    if (heldDetector(slot.state) === undefined && existsSync(path)) {
      slot.state = holding(slot.state, this.#openDetector(path, partition));
    }
    const local = heldDetector(slot.state);
    if (local !== undefined) {
      const applied = local.appliedOffset;
      const current =
        applied >= 0 &&
        (committed < 0 || committed <= applied + 1) &&
        local.appliedUnixMillis >= now() - this.#options.detectorConfig.retryHorizonMillis;
      if (!current) {
        local.close();
        PartitionDetector.remove(path);
        slot.state = holding(slot.state, undefined);
      }
    }
    let from: number;
    const offsets = await admin.fetchTopicOffsets(topic);
    const bounds = offsets.find((p) => p.partition === partition);
    slot.takeoverThrough = Number(bounds?.high ?? 0) - 1;
    const resumed = heldDetector(slot.state);
    if (resumed !== undefined) {
      await this.#flush(resumed);
      from = resumed.appliedOffset + 1;
      counters.resumes++;
      logger.info(`detect: ${topic}[${partition}] resumes from its state at offset ${from}`);
    } else {
      slot.state = holding(slot.state, this.#openDetector(path, partition));
      from = Number(bounds?.low ?? 0);
      counters.rebuilds++;
      logger.info(`detect: ${topic}[${partition}] rebuilds its state from offset ${from}`);
    }
    if (!isOwned(slot.state)) return;
    await this.#publishTakeoverOnceCaughtUp(slot, heldDetector(slot.state)!);
    consumer.seek({ topic, partition, offset: String(from) });
    slot.state = positioned(slot.state);
    this.#options.backoff.resume(partition);
  }

  /** Publishes the takeover once the state covers the partition as it was when positioned. */
  async #publishTakeoverOnceCaughtUp(slot: Slot, detector: PartitionDetector): Promise<void> {
    if (slot.takeoverThrough === undefined || detector.appliedOffset < slot.takeoverThrough) return;
    slot.takeoverThrough = undefined;
    detector.publishTakeover();
    await this.#flush(detector);
  }

  async #applyBatch(slot: Slot, batch: Batch, resolveOffset: (offset: string) => void): Promise<void> {
    const detector = readyDetector(slot.state);
    if (detector === undefined) return;
    const { topic, consumer, counters, logger, now } = this.#options;
    const partition = slot.partition;
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
    const oldest = now() - this.#options.detectorConfig.retryHorizonMillis;
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
        await this.#options.deadLetters.record(unreadableRecord(topic, partition, message), error);
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
    await this.#flush(detector);
    counters.attemptsDetected += detector.apply(records, last);
    counters.detectTransactions++;
    await this.#flush(detector);
    await this.#publishTakeoverOnceCaughtUp(slot, detector);
    this.#options.backoff.succeeded(partition);
    this.#options.committer.mark(partition, last + 1);
  }

  /** Sends what the state committed but Kafka has not acknowledged yet. */
  async #flush(detector: PartitionDetector): Promise<void> {
    const pending = detector.pending();
    if (pending.length === 0) return;
    const { producer, incidentsTopic, incidentsPartitions, counters } = this.#options;
    const target = detector.partition % incidentsPartitions;
    await sendInChunks(
      producer,
      incidentsTopic,
      pending.map((record) => ({ ...encodeIncidentRecord(record), partition: target })),
      counters,
    );
    detector.delivered(pending.length);
  }

  async #committedOffset(partition: number): Promise<number> {
    const { admin, groupId, topic } = this.#options;
    const [entry] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const offset = entry?.partitions.find((p) => p.partition === partition)?.offset ?? '-1';
    return Number(offset);
  }

  #openDetector(path: string, partition: number): PartitionDetector {
    const { detectorConfig, retentionMillis, now } = this.#options;
    return new PartitionDetector({ path, partition, detectorConfig, retentionMillis, now });
  }
}

/** Detector stats of several partitions as one instance's: counts add up, the watermark is the newest. */
export function sumDetectorStats(parts: readonly DetectorStats[]): DetectorStats {
  const sum: DetectorStats = {
    keysInMemory: 0,
    suspectKeys: 0,
    attempts: 0,
    duplicateAttempts: 0,
    evictedKeys: 0,
    rebuiltKeys: 0,
    cappedAttempts: 0,
    hotKeys: 0,
    findingStoresLeftOut: 0,
    findingNodesLeftOut: 0,
    incidentStoresLeftOut: 0,
    incidentNodesLeftOut: 0,
    internedNames: 0,
    coverageEntries: 0,
    coverageEvictedEntries: 0,
    tiers: 0,
    tierOverflowAttempts: 0,
    routingFollowUpKeys: 0,
    routingFollowUpDropped: 0,
    regroupedKeys: 0,
    watermarkUnixMillis: 0,
  };
  for (const part of parts) {
    for (const field of Object.keys(sum) as (keyof DetectorStats)[]) {
      sum[field] =
        field === 'watermarkUnixMillis' ? Math.max(sum[field], part[field]) : sum[field] + part[field];
    }
  }
  return sum;
}
