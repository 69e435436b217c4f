import { ACCEPTED_ALL, type ConsumeResult, type Span, type SpanConsumer } from '@keyscope/otlp';

/**
 * Holds every call until `release()`: a pipeline that has stopped keeping up, so tests can fill the
 * receivers' admission limits.
 */
export class BlockingConsumer implements SpanConsumer {
  readonly received: Span[][] = [];
  #blocked: (() => void)[] = [];
  #waiters: { count: number; resolve: () => void }[] = [];

  consumeSpans(spans: Span[]): Promise<ConsumeResult> {
    this.received.push(spans);
    const answered = new Promise<ConsumeResult>((resolve) => this.#blocked.push(() => resolve(ACCEPTED_ALL)));
    for (const waiter of this.#waiters.filter((w) => this.#blocked.length >= w.count)) waiter.resolve();
    return answered;
  }

  /** Resolves once `count` calls are being held; rejects after `timeoutMillis`. */
  whenHolding(count: number, timeoutMillis = 5_000): Promise<void> {
    if (this.#blocked.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `consumer holds ${this.#blocked.length} calls after ${timeoutMillis} ms, expected ${count}`,
            ),
          ),
        timeoutMillis,
      );
      this.#waiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** Answers every call held so far; later calls block again. */
  release(): void {
    const blocked = this.#blocked;
    this.#blocked = [];
    for (const answer of blocked) answer();
  }
}
