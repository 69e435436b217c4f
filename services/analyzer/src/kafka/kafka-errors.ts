import { defineError } from '@keyscope/errors';

/**
 * Error codes of the scaled mode (`keyscope serve --role ingest|detect|serve`): what stops a role
 * from starting, what the ingest role answers OTLP senders when Kafka does not take their
 * attempts, and what a consumer counts and skips. Bad OTLP in a traces message is the otlp
 * package's `KS_OTLP_*`.
 */

export const KAFKA_TOPIC_MISSING = defineError(
  'KS_KAFKA_TOPIC_MISSING',
  500,
  false,
  'A topic keyscope reads or writes does not exist and could not be created (`kafka.createTopics` is false, or the broker refused CreateTopics); startup stops naming the topic and the partitions to create it with.',
);

export const KAFKA_UNAVAILABLE = defineError(
  'KS_KAFKA_UNAVAILABLE',
  503,
  true,
  'Producing to Kafka failed (brokers unreachable, leader moving, request timed out). OTLP senders of the ingest role get 503 and retry; a consumer pauses the partition and retries the same messages after a backoff.',
);

export const KAFKA_RECORD_INVALID = defineError(
  'KS_KAFKA_RECORD_INVALID',
  400,
  false,
  'A record on the attempts or incidents topic is not one keyscope wrote (not JSON, unknown version, missing fields). It is counted, logged with its partition and offset, copied to `kafka.deadLetter.topic` when set, and skipped.',
);

export const KAFKA_CONSUMER_STOPPED = defineError(
  'KS_KAFKA_CONSUMER_STOPPED',
  500,
  false,
  'A Kafka consumer stopped and cannot be started again: an error no restart cures (a compression codec kafkajs cannot read), or more than 10 restarts within 5 minutes; the role exits with status 1 so that its supervisor restarts it.',
);

/** Every code the Kafka roles declare, for the registry test. */
export const KAFKA_ERRORS = [
  KAFKA_TOPIC_MISSING,
  KAFKA_UNAVAILABLE,
  KAFKA_RECORD_INVALID,
  KAFKA_CONSUMER_STOPPED,
] as const;
