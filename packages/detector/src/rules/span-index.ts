import type { Attempt } from '@keyscope/attempts';

/**
 * One key's evidence by span, for the judgements that follow a span to its parent (a decision to
 * its request's SERVER span, a request to its send, a side effect up to its request). Built once
 * per evidence array, on the first question, and shared by every question about that array.
 *
 * Indexed by span id alone and checked against the trace id, instead of by a string of both made
 * for every lookup: span ids are random 64 bits, and the attempt log holds each (trace id, span
 * id) once. Two spans of one key that share a span id in different traces (which only a sender
 * making them so would give) are both kept, the second by both ids.
 */
export class SpanIndex {
  readonly #bySpanId = new Map<string, Attempt>();
  #otherTraces: Map<string, Attempt> | null = null;

  constructor(evidence: readonly Attempt[]) {
    for (const attempt of evidence) {
      const held = this.#bySpanId.get(attempt.spanId);
      if (held === undefined) this.#bySpanId.set(attempt.spanId, attempt);
      else if (held.traceId !== attempt.traceId) {
        const other = (this.#otherTraces ??= new Map());
        const id = `${attempt.traceId}/${attempt.spanId}`;
        if (!other.has(id)) other.set(id, attempt);
      }
    }
  }

  /** The key's span `spanId` of trace `traceId` (the first, if the evidence holds two). */
  get(traceId: string, spanId: string): Attempt | undefined {
    const found = this.#bySpanId.get(spanId);
    if (found === undefined || found.traceId === traceId) return found;
    return this.#otherTraces?.get(`${traceId}/${spanId}`);
  }
}

const indexes = new WeakMap<readonly Attempt[], SpanIndex>();

/** The index of `evidence`, built on its first use; `evidence` must not change after. */
export function spanIndexOf(evidence: readonly Attempt[]): SpanIndex {
  let index = indexes.get(evidence);
  if (index === undefined) {
    index = new SpanIndex(evidence);
    indexes.set(evidence, index);
  }
  return index;
}
