import type { Attempt } from '@keyscope/attempts';

/**
 * Where every attempt of a key is kept for the retry horizon: the evidence a finding carries and
 * what a key lookup answers. The detector keeps only a compact summary per key in memory and
 * reads a key's attempts back from here when the key needs judging.
 *
 * It is also the authority on redelivery: `append` returns false for an attempt whose
 * (trace id, span id) it already holds, and the detector then ignores it. Implementations are
 * synchronous (the SQLite one runs inside the ingest transaction).
 */
export interface AttemptLog {
  append(partitionKey: string, attempt: Attempt): boolean;
  /** The key's attempts in the order they were appended, equal to them (not necessarily the same objects). */
  attemptsOf(partitionKey: string): Attempt[];
  /** Forgets attempts of keys last seen before this time. */
  expire(beforeUnixMillis: number): void;
}

/**
 * The detector's default log, for tests and benchmarks: the attempt objects themselves, in memory.
 * `keyscope analyze` keeps the compact log instead (compact-attempt-log.ts), a fifth of the memory.
 */
export function createMemoryAttemptLog(): AttemptLog {
  const byKey = new Map<string, { attempts: Attempt[]; spans: Set<string>; lastSeenUnixMillis: number }>();
  return {
    append(partitionKey, attempt) {
      let entry = byKey.get(partitionKey);
      if (entry === undefined) {
        entry = { attempts: [], spans: new Set(), lastSeenUnixMillis: attempt.endUnixMillis };
        byKey.set(partitionKey, entry);
      }
      const spanKey = attempt.traceId + attempt.spanId;
      if (entry.spans.has(spanKey)) return false;
      entry.spans.add(spanKey);
      entry.attempts.push(attempt);
      if (attempt.endUnixMillis > entry.lastSeenUnixMillis) entry.lastSeenUnixMillis = attempt.endUnixMillis;
      return true;
    },
    attemptsOf(partitionKey) {
      return byKey.get(partitionKey)?.attempts.slice() ?? [];
    },
    expire(beforeUnixMillis) {
      for (const [key, entry] of byKey) if (entry.lastSeenUnixMillis < beforeUnixMillis) byKey.delete(key);
    },
  };
}
