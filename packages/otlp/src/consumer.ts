import type { Span } from './span.ts';

/**
 * The boundary between a receiver and the rest of the pipeline (the collector's
 * `consumer.Traces`). A receiver decodes one payload and calls `consumeSpans` once with all of its
 * spans; it acknowledges the sender only after the returned promise resolves.
 *
 * Contract:
 * - The consumer owns `spans` after the call; the receiver never touches the array again.
 * - Resolving means the spans' effect is as durable as this consumer promises (the embedded
 *   service resolves after its SQLite commit). The receiver answers 200 / OK only then.
 * - Rejecting with a retryable `KeyscopeError` (queue full, store unavailable) makes the receiver
 *   answer 429/503 or RESOURCE_EXHAUSTED/UNAVAILABLE so the sender retries the whole payload;
 *   a permanent one makes it answer 400 / INVALID_ARGUMENT.
 * - Spans the consumer refuses individually are reported back in `rejectedSpans`; the receiver
 *   turns them into OTLP `partial_success` and counts them by `rejectedByReason`.
 */
export interface SpanConsumer {
  consumeSpans(spans: Span[]): Promise<ConsumeResult>;
}

export interface ConsumeResult {
  /** Spans accepted by the receiver but refused by this consumer. 0 when all were taken. */
  rejectedSpans: number;
  /** Why, for `partial_success.error_message`; '' when nothing was rejected. */
  errorMessage: string;
  /**
   * The rejected spans by the `KS_*` code of the rule each broke, for the receivers' counters
   * (a closed list: codes are declared once). Spans `rejectedSpans` counts beyond these are
   * counted as refused without a reason.
   */
  rejectedByReason?: Readonly<Record<string, number>>;
}

export const ACCEPTED_ALL: ConsumeResult = Object.freeze({ rejectedSpans: 0, errorMessage: '' });
