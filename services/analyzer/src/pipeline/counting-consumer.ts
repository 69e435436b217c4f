import { ACCEPTED_ALL, type ConsumeResult, type Span, type SpanConsumer } from '@keyscope/otlp';

/**
 * The embedded service's consumer until attempts → detector → store are wired behind the same
 * interface: it takes every span and only counts them.
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
