import { ACCEPTED_ALL, type ConsumeResult, type Span, type SpanConsumer } from '@keyscope/otlp';

/**
 * A consumer that takes every span and only counts them: the receivers' default when they are
 * started without one (`startReceivers`), and the bench's stand-in for the pipeline when it
 * measures the receivers alone.
 */
export class CountingConsumer implements SpanConsumer {
  #spans = 0;
  #payloads = 0;

  async consumeSpans(spans: Span[]): Promise<ConsumeResult> {
    this.#spans += spans.length;
    this.#payloads += 1;
    return ACCEPTED_ALL;
  }

  counts(): { spans: number; payloads: number } {
    return { spans: this.#spans, payloads: this.#payloads };
  }
}
