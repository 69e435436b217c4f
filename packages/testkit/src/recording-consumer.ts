import { ACCEPTED_ALL, type ConsumeResult, type Span, type SpanConsumer } from '@keyscope/otlp';

/**
 * Keeps every payload it is handed, and answers with `result` (all accepted unless set) or throws
 * `failWith` when set.
 */
export class RecordingConsumer implements SpanConsumer {
  readonly payloads: Span[][] = [];
  result: ConsumeResult = ACCEPTED_ALL;
  failWith: unknown;

  async consumeSpans(spans: Span[]): Promise<ConsumeResult> {
    if (this.failWith !== undefined) throw this.failWith;
    this.payloads.push(spans);
    return this.result;
  }

  spans(): Span[] {
    return this.payloads.flat();
  }
}
