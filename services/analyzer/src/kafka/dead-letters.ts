import { isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import type { IHeaders, KafkaMessage, Producer } from 'kafkajs';
import type { Logger } from '../logger.ts';
import type { KafkaCounters } from './kafka-counters.ts';
import { KAFKA_UNAVAILABLE } from './kafka-errors.ts';

export interface UnreadableRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: IHeaders;
}

/** The record a consumer read as `message` from `topic`[`partition`]. */
export function unreadableRecord(topic: string, partition: number, message: KafkaMessage): UnreadableRecord {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key,
    value: message.value,
    headers: message.headers,
  };
}

/**
 * What a consumer does with a record it cannot read: count it, log where it is, copy it to the
 * dead-letter topic when one is configured, and move on. A poison record must never stop its
 * partition: the sender does not change the bytes, so retrying would fail the same way forever.
 */
export interface DeadLettersOptions {
  readonly producer: Producer;
  /** `kafka.deadLetter.topic`; '' to count and log only. */
  readonly topic: string;
  readonly counters: KafkaCounters;
  readonly logger: Logger;
  readonly role: string;
}

export class DeadLetters {
  readonly #options: DeadLettersOptions;

  constructor(options: DeadLettersOptions) {
    this.#options = options;
  }

  /** A record without a value (a tombstone on a topic that should have none): nothing to copy. */
  empty(record: UnreadableRecord): void {
    this.#options.counters.skip(record.topic, 'empty_value');
  }

  /** Resolves once the record is accounted for; rejects (retryable) only if the dead-letter copy failed. */
  async record(record: UnreadableRecord, error: unknown): Promise<void> {
    const { producer, topic, counters, logger, role } = this.#options;
    const reason = reasonOf(error);
    counters.skip(record.topic, reason);
    logger.error(
      `kafka ${role}: skipped ${record.topic}[${record.partition}]@${record.offset}: ${reason}: ` +
        `${(error as Error)?.message ?? String(error)}`,
    );
    if (topic === '') return;
    try {
      await producer.send({
        topic,
        acks: -1,
        messages: [
          {
            key: record.key,
            value: record.value,
            headers: {
              ...record.headers,
              'keyscope-source-topic': record.topic,
              'keyscope-source-partition': String(record.partition),
              'keyscope-source-offset': record.offset,
              'keyscope-error': reason,
            },
          },
        ],
      });
      counters.count(counters.produced, topic);
    } catch (cause) {
      throw new KeyscopeError(
        KAFKA_UNAVAILABLE,
        `cannot copy ${record.topic}[${record.partition}]@${record.offset} to ${topic}: ${(cause as Error).message}`,
        { cause },
      );
    }
  }
}

/** The closed list of KafkaCounters: a KS_* code, or `internal_error` for a decoder bug. */
function reasonOf(error: unknown): string {
  return isKeyscopeError(error) ? error.code : 'internal_error';
}
