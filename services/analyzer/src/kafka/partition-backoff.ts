import type { Consumer } from 'kafkajs';
import type { Logger } from '../logger.ts';
import type { KafkaCounters } from './kafka-counters.ts';

const INITIAL_MILLIS = 250;
const MAX_MILLIS = 30_000;

/**
 * Backpressure for a consumer: when the work behind a partition fails for a reason that may pass
 * (Kafka refuses a produce, the store cannot write), the partition is paused and resumed after an
 * exponential backoff, and its unresolved messages are fetched again. Nothing is buffered
 * meanwhile and the consumer never throws, which would make kafkajs restart it and rebalance the
 * whole group for one slow dependency.
 */
export class PartitionBackoff {
  readonly #delays = new Map<number, number>();
  readonly #timers = new Map<number, NodeJS.Timeout>();
  #stopped = false;

  constructor(
    private readonly consumer: Consumer,
    private readonly topic: string,
    private readonly counters: KafkaCounters,
    private readonly logger: Logger,
    private readonly role: string,
  ) {}

  failed(partition: number, error: unknown): void {
    if (this.#stopped) return;
    const delay = Math.min(MAX_MILLIS, (this.#delays.get(partition) ?? INITIAL_MILLIS / 2) * 2);
    this.#delays.set(partition, delay);
    this.counters.backoffs++;
    this.logger.error(
      `kafka ${this.role}: ${this.topic}[${partition}] paused for ${delay} ms: ${(error as Error)?.message ?? String(error)}`,
    );
    this.pause(partition);
    clearTimeout(this.#timers.get(partition));
    const timer = setTimeout(() => {
      this.#timers.delete(partition);
      this.resume(partition);
    }, delay);
    timer.unref();
    this.#timers.set(partition, timer);
  }

  succeeded(partition: number): void {
    this.#delays.delete(partition);
  }

  /** True while a failed partition waits for its retry. */
  waiting(partition: number): boolean {
    return this.#timers.has(partition);
  }

  pause(partition: number): void {
    try {
      this.consumer.pause([{ topic: this.topic, partitions: [partition] }]);
    } catch {
      // Not running any more (stopping or restarting): nothing is fetched for it anyway.
    }
  }

  resume(partition: number): void {
    if (this.#stopped || this.#timers.has(partition)) return;
    try {
      this.consumer.resume([{ topic: this.topic, partitions: [partition] }]);
    } catch {
      // As in pause: a consumer that is not running has nothing to resume.
    }
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
