import {
  type Attempt,
  type ExtractedAttempts,
  extractAttempts,
  type Mapping,
  partitionKey,
  SendLinker,
  type SpanLimits,
} from '@keyscope/attempts';
import { isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import type { ConsumeResult, Span, SpanConsumer } from '@keyscope/otlp';
import type { Message, Producer } from 'kafkajs';
import { consumeResultOf } from '../pipeline/span-window.ts';
import { type ActivityEntry, encodeActivityRecord, encodeAttemptRecord } from './attempt-records.ts';
import { sendInChunks } from './chunked-send.ts';
import type { KafkaCounters } from './kafka-counters.ts';
import { KAFKA_UNAVAILABLE } from './kafka-errors.ts';

export interface AttemptsWriterOptions {
  readonly producer: Producer;
  readonly topic: string;
  /** Partitions of the attempts topic: node activity is written to each of them. */
  readonly partitions: number;
  readonly mapping: Mapping;
  readonly counters: KafkaCounters;
  /** The time window and size limits spans are held to, for spans arriving now (span-window.ts). */
  readonly limits: () => SpanLimits;
}

/**
 * The ingest role's output: attempts to the attempts topic keyed by `partitionKey` (every attempt
 * of one key on one partition), and the node activity they were extracted with to every
 * partition, ahead of the attempts in the same request so that a detector sees a failover's
 * traffic before the duplicates it caused — as the embedded pipeline does within one batch.
 *
 * As a SpanConsumer it is what the OTLP receivers of the ingest role feed: a request is answered
 * 200 only once its attempts are acknowledged by Kafka, and 503 (the sender retries) if Kafka
 * refused them.
 */
export class AttemptsWriter implements SpanConsumer {
  readonly #options: AttemptsWriterOptions;
  /**
   * Gives keyless sends their key, for the OTLP receivers and the traces topic alike: a send and
   * its server spans may come by either.
   */
  readonly #sendLinker = new SendLinker();

  constructor(options: AttemptsWriterOptions) {
    this.#options = options;
  }

  async consumeSpans(spans: Span[]): Promise<ConsumeResult> {
    const extracted = extractAttempts(spans, this.#options.mapping, this.#options.limits());
    this.linkSends(extracted);
    try {
      await this.write(extracted.attempts, [{ source: '', offset: 0, samples: extracted.activity }]);
    } catch (error) {
      if (isKeyscopeError(error)) throw error;
      throw new KeyscopeError(KAFKA_UNAVAILABLE, (error as Error).message, { cause: error });
    }
    return consumeResultOf(extracted.refusals);
  }

  /**
   * Appends to `extracted.attempts` the keyless sends linked to their key now (see SendLinker),
   * from these spans or earlier ones; counted in `KafkaCounters.sendLinks`.
   */
  linkSends(extracted: ExtractedAttempts): void {
    this.#sendLinker.linkInto(extracted);
    const { linked, evicted, expired } = this.#sendLinker.counts();
    Object.assign(this.#options.counters.sendLinks, { linked, evicted, expired });
  }

  /** Resolves once everything is acknowledged by Kafka; rejects with KS_KAFKA_UNAVAILABLE. */
  async write(attempts: readonly Attempt[], activity: readonly ActivityEntry[]): Promise<void> {
    const { producer, topic, partitions, mapping, counters } = this.#options;
    const messages: Message[] = [];
    for (const value of activityRecords(activity.filter((entry) => entry.samples.length > 0))) {
      for (let partition = 0; partition < partitions; partition++) messages.push({ partition, value });
    }
    for (const attempt of attempts) {
      messages.push({ key: partitionKey(attempt, mapping), value: encodeAttemptRecord(attempt) });
    }
    if (messages.length === 0) return;
    await sendInChunks(producer, topic, messages, counters);
    counters.attemptsExtracted += attempts.length;
  }
}

/** Well below the brokers' 1 MiB record limit, however many traces messages one batch read. */
const MAX_ACTIVITY_RECORD_BYTES = 256 * 1024;

/** The activity of one batch as records of bounded size; an entry is never split. */
function activityRecords(entries: readonly ActivityEntry[]): Buffer[] {
  const records: Buffer[] = [];
  let group: ActivityEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    // A sample is about 150 bytes of JSON; exact sizes do not matter, only staying well below.
    const size = 64 + entry.source.length + entry.samples.length * 200;
    if (group.length > 0 && bytes + size > MAX_ACTIVITY_RECORD_BYTES) {
      records.push(encodeActivityRecord(group));
      group = [];
      bytes = 0;
    }
    group.push(entry);
    bytes += size;
  }
  if (group.length > 0) records.push(encodeActivityRecord(group));
  return records;
}
