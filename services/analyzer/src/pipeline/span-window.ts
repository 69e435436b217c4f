import { EARLIEST_SPAN_UNIX_MILLIS, type SpanLimits, type SpanRefusals } from '@keyscope/attempts';
import { ACCEPTED_ALL, type ConsumeResult } from '@keyscope/otlp';
import type { SpansConfig } from '../config.ts';

/**
 * The limits spans arriving at `nowUnixMillis` are held to (docs/configuration.md, "Spans"): no
 * earlier than the retry horizon plus `maxLateMillis` before the clock (and never before 2000),
 * no later than `maxFutureMillis` after it, and the size limits. The window moves with the clock,
 * so it is computed per batch. The embedded pipeline and the Kafka ingest role both extract with it.
 */
export function spanLimitsAt(
  nowUnixMillis: number,
  retryHorizonMillis: number,
  spans: SpansConfig,
): SpanLimits {
  const oldest = nowUnixMillis - retryHorizonMillis - spans.maxLateMillis;
  return {
    notBeforeUnixMillis: Math.max(EARLIEST_SPAN_UNIX_MILLIS, oldest),
    notAfterUnixMillis: nowUnixMillis + spans.maxFutureMillis,
    maxKeyBytes: spans.maxKeyBytes,
    maxNameBytes: spans.maxNameBytes,
    maxValueBytes: spans.maxValueBytes,
  };
}

/** Spans refused under the limits, as the receivers answer them: OTLP `partial_success`, by code. */
export function consumeResultOf(refusals: SpanRefusals): ConsumeResult {
  if (refusals.total === 0) return ACCEPTED_ALL;
  const codes = Object.entries(refusals.byCode)
    .map(([code, n]) => `${code} ×${n}`)
    .join(', ');
  return {
    rejectedSpans: refusals.total,
    errorMessage: `${refusals.total} ${refusals.total === 1 ? 'span' : 'spans'} refused (${codes}); the first: ${refusals.firstMessage}`,
    rejectedByReason: { ...refusals.byCode },
  };
}
