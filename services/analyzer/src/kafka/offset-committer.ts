import type { Consumer } from 'kafkajs';

const INTERVAL_MILLIS = 1_000;

/**
 * Commits a consumer's offsets once a second instead of after every batch, which on small
 * batches cost more than the work itself. A partition is marked only after the state covering
 * the offset is durable, so a commit never runs ahead of that state; it may trail it by up to a
 * second, and what a crash makes Kafka deliver again is a no-op (deterministic ids, dedup by span,
 * applied offsets).
 */
export class OffsetCommitter {
  readonly #marked = new Map<number, number>();
  readonly #timer: NodeJS.Timeout;
  #committing: Promise<void> = Promise.resolve();

  constructor(
    private readonly consumer: Consumer,
    private readonly topic: string,
  ) {
    this.#timer = setInterval(() => void this.commit(), INTERVAL_MILLIS);
    this.#timer.unref();
    // Marks of partitions this member lost would be refused at every commit from then on.
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      const assigned = new Set(event.payload.memberAssignment[topic] ?? []);
      for (const partition of this.#marked.keys())
        if (!assigned.has(partition)) this.#marked.delete(partition);
    });
  }

  /** Everything below `nextOffset` of this partition is durably handled. */
  mark(partition: number, nextOffset: number): void {
    this.#marked.set(partition, nextOffset);
  }

  /** A revoked partition: its new owner commits from now on. */
  forget(partition: number): void {
    this.#marked.delete(partition);
  }

  /** Commits what is marked (one request); a failed commit (rebalance) is retried by the next. */
  commit(): Promise<void> {
    this.#committing = this.#committing.then(async () => {
      if (this.#marked.size === 0) return;
      const offsets = [...this.#marked].map(([partition, offset]) => ({
        topic: this.topic,
        partition,
        offset: String(offset),
      }));
      this.#marked.clear();
      try {
        await this.consumer.commitOffsets(offsets);
      } catch {
        // The group is rebalancing or a partition moved: keep the marks that are still newest, so
        // the next commit carries them, unless a later batch marked a higher offset meanwhile.
        for (const { partition, offset } of offsets) {
          if (!this.#marked.has(partition)) this.#marked.set(partition, Number(offset));
        }
      }
    });
    return this.#committing;
  }

  /** Commits once more and stops the timer; call before the consumer disconnects. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.commit();
  }
}
