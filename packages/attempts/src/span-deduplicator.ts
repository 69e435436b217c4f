/**
 * Recognises redelivered spans (exporters and collectors retry whole batches) by (trace id, span
 * id), so that a redelivery never looks like a second execution.
 *
 * Memory is bounded, so recognition is best effort: ids live in two generations, and when the
 * young one fills up it becomes the old one and the previous old one is dropped. At least the
 * `maxEntries / 2` most recent ids are always remembered, and never more than `maxEntries`. A
 * redelivery older than that window gets through; the detector ignores a repeated (trace id, span
 * id) within one key's state as well, so this stage only has to catch the common case cheaply.
 *
 * `extractAttempts` consults it only for spans that become attempts: spans without a key are never
 * remembered, so they cost nothing here.
 */
export interface SpanDeduplicator {
  /** Records the span's id; true when it had been recorded before (a redelivery). */
  seen(traceId: string, spanId: string): boolean;
  /** Ids currently remembered; never more than `maxEntries`. */
  readonly size: number;
}

export interface SpanDeduplicatorOptions {
  /** At least 2. */
  maxEntries: number;
}

/** About 20 MB of ids: seconds to minutes of keyed spans at high rates, enough for exporter retries. */
export const DEFAULT_DEDUPLICATOR_MAX_ENTRIES = 200_000;

export function createSpanDeduplicator(
  options: SpanDeduplicatorOptions = { maxEntries: DEFAULT_DEDUPLICATOR_MAX_ENTRIES },
): SpanDeduplicator {
  const { maxEntries } = options;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 2) {
    throw new RangeError(`maxEntries must be an integer of at least 2, received ${maxEntries}`);
  }
  const generationSize = Math.floor(maxEntries / 2);
  let young = new Set<string>();
  let old = new Set<string>();
  return {
    seen(traceId, spanId) {
      const id = traceId + spanId;
      if (young.has(id) || old.has(id)) return true;
      young.add(id);
      if (young.size >= generationSize) {
        old = young;
        young = new Set();
      }
      return false;
    },
    get size() {
      return young.size + old.size;
    },
  };
}
