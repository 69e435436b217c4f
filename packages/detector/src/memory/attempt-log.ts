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
 *
 * Most keys hold a handful of attempts: a redelivery is found by comparing ids with each of them,
 * which costs no string and no set per key; a key past `SPAN_SCAN_LIMIT` attempts gets a set of its
 * spans, so that a hot key's appends stay constant-time.
 */
export function createMemoryAttemptLog(): AttemptLog {
  const byKey = new Map<string, HeldAttempts>();
  return {
    append(partitionKey, attempt) {
      let entry = byKey.get(partitionKey);
      if (entry === undefined) {
        entry = { attempts: [], spans: null, lastSeenUnixMillis: attempt.endUnixMillis };
        byKey.set(partitionKey, entry);
      }
      if (holds(entry, attempt)) return false;
      entry.attempts.push(attempt);
      if (entry.spans !== null) entry.spans.add(spanKeyOf(attempt));
      else if (entry.attempts.length > SPAN_SCAN_LIMIT) entry.spans = new Set(entry.attempts.map(spanKeyOf));
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

/** Attempts of a key past which redelivery is checked in a set rather than by comparing ids. */
const SPAN_SCAN_LIMIT = 16;

interface HeldAttempts {
  attempts: Attempt[];
  /** The spans of `attempts` (trace id + span id), once there are more than `SPAN_SCAN_LIMIT`. */
  spans: Set<string> | null;
  lastSeenUnixMillis: number;
}

function holds(entry: HeldAttempts, attempt: Attempt): boolean {
  if (entry.spans !== null) return entry.spans.has(spanKeyOf(attempt));
  for (const held of entry.attempts)
    if (held.spanId === attempt.spanId && held.traceId === attempt.traceId) return true;
  return false;
}

function spanKeyOf(attempt: Attempt): string {
  return attempt.traceId + attempt.spanId;
}
