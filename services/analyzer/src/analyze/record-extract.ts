import { type CheckedAttempts, extractAttempts, type Mapping, type SpanLimits } from '@keyscope/attempts';
import type { Span } from '@keyscope/otlp';

/**
 * What one request's spans give the analysis: their attempts (and activity, refusals) and what the
 * report counts of the spans themselves. Plain data, so that it can be made on another thread
 * (extract-workers.ts) from the mapping and limits alone; this file imports
 * nothing of the detector or the service, so that a thread loads only what extraction needs.
 */
export interface RecordExtract {
  readonly extracted: CheckedAttempts;
  readonly spans: number;
  /** Event time of the earliest start and latest end among spans inside the time window; null when none. */
  readonly firstUnixMillis: number | null;
  readonly lastUnixMillis: number | null;
}

/** What `extractRecord` needs besides the spans, as `Analysis.extraction` gives it. */
export interface ExtractionInputs {
  readonly mapping: Mapping;
  readonly limits: SpanLimits;
}

/** One request's spans as the analysis takes them, under the mapping and the time window and limits. */
export function extractRecord(spans: readonly Span[], { mapping, limits }: ExtractionInputs): RecordExtract {
  const extracted = extractAttempts(spans, mapping, limits);
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  const { notBeforeUnixMillis, notAfterUnixMillis } = limits;
  let inWindow = 0;
  for (let i = 0; i < spans.length; i++) {
    const span = spans[i]!;
    const start = span.startTimeUnixMillis;
    const end = span.endTimeUnixMillis;
    // As extraction's time rules (span-limits.ts): a refused time says nothing about the archive.
    if (!(start >= notBeforeUnixMillis && end <= notAfterUnixMillis && end >= start)) continue;
    inWindow++;
    if (start < first) first = start;
    if (end > last) last = end;
  }
  return {
    extracted,
    spans: spans.length,
    firstUnixMillis: inWindow > 0 ? first : null,
    lastUnixMillis: inWindow > 0 ? last : null,
  };
}
