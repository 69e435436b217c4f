import { KeyscopeError } from '@keyscope/errors';
import type { Message, Producer } from 'kafkajs';
import type { KafkaCounters } from './kafka-counters.ts';
import { KAFKA_UNAVAILABLE } from './kafka-errors.ts';

/**
 * Below the brokers' default `message.max.bytes` (1 MiB), which bounds one partition's record
 * batch in a produce request: large findings (every attempt of a key) must not make a whole
 * request fail.
 */
const MAX_REQUEST_BYTES = 512 * 1024;

/**
 * Sends messages in order, in requests of at most ~512 KiB, each acknowledged by all in-sync
 * replicas (acks=-1) before the next: a resolved promise means every message is durable in Kafka.
 * Failures become KS_KAFKA_UNAVAILABLE (retryable).
 */
export async function sendInChunks(
  producer: Producer,
  topic: string,
  messages: readonly Message[],
  counters: KafkaCounters,
): Promise<void> {
  let chunk: Message[] = [];
  let bytes = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    try {
      await producer.send({ topic, acks: -1, messages: chunk });
    } catch (cause) {
      throw new KeyscopeError(KAFKA_UNAVAILABLE, `cannot write to ${topic}: ${(cause as Error).message}`, {
        cause,
      });
    }
    counters.count(counters.produced, topic, chunk.length);
    chunk = [];
    bytes = 0;
  };
  for (const message of messages) {
    const size = sizeOf(message.value) + sizeOf(message.key) + 64;
    if (bytes + size > MAX_REQUEST_BYTES) await flush();
    chunk.push(message);
    bytes += size;
  }
  await flush();
}

function sizeOf(value: Message['value'] | Message['key']): number {
  if (value === null || value === undefined) return 0;
  return typeof value === 'string' ? Buffer.byteLength(value) : value.length;
}
