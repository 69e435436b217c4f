import type { Attempt } from '@keyscope/attempts';
import { AttemptRecordCodec } from './attempt-records.ts';

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

/** What the memory log holds, for measuring it. */
export interface MemoryAttemptLogStats {
  keys: number;
  attempts: number;
  /** Characters of the keys' records (one byte each), their identity sets not included. */
  recordBytes: number;
  /** Names and placements interned. */
  names: number;
}

export interface MemoryAttemptLog extends AttemptLog {
  stats(): MemoryAttemptLogStats;
}

/** A key's records in a chunk beyond this many characters start a new one: appending copies the last chunk only. */
const CHUNK_CHARS = 4096;
/**
 * Keys with more attempts than this check redelivery against a set of their identities; below,
 * reading their records is cheaper than a set per key (an empty Set alone is ~150 bytes).
 */
const IDENTITY_SET_ATTEMPTS = 32;
/** Names and placements the codec may intern before `expire` first compacts them. */
const MIN_TABLE_LIMIT = 65_536;

class KeyAttempts {
  /** The records of the newest chunk. */
  records = '';
  /** Full chunks before `records`, oldest first. */
  chunks: string[] | null = null;
  count = 0;
  identities: Set<string> | null = null;

  constructor(
    /** The first attempt's key: records of attempts with the same key do not repeat it. */
    readonly key: string,
    public lastSeenUnixMillis: number,
  ) {}
}

/**
 * The log for tests and `keyscope analyze`: everything in memory, each key's attempts encoded in
 * Latin-1 strings (attempt-records.ts), about 60 bytes an attempt and 150 a key, where attempt
 * objects with their strings and a Set of span ids cost ~460 an attempt. Keys are kept in the
 * order they were last appended to, so `expire` stops at the first key appended to since its
 * cutoff (a key whose late attempt is older than its others waits for a later sweep). Once
 * `expire` has left the codec's names and placements twice what the keys still use (and more than
 * MIN_TABLE_LIMIT), it re-encodes every key with fresh tables.
 */
export function createMemoryAttemptLog(): MemoryAttemptLog {
  const codec = new AttemptRecordCodec();
  let byKey = new Map<string, KeyAttempts>();
  let attempts = 0;
  let tableLimit = MIN_TABLE_LIMIT;
  /** Whether keys were forgotten since the last compaction. */
  let forgotten = false;

  function isRedelivery(entry: KeyAttempts, record: string): boolean {
    const identity = codec.identityOf(record, 0);
    if (entry.identities !== null) {
      if (entry.identities.has(identity)) return true;
      entry.identities.add(identity);
      return false;
    }
    for (const chunk of chunksOf(entry))
      for (let at = 0; at < chunk.length; at = AttemptRecordCodec.next(chunk, at))
        if (codec.hasIdentity(chunk, at, identity)) return true;
    if (entry.count >= IDENTITY_SET_ATTEMPTS) {
      const identities = new Set<string>([identity]);
      for (const chunk of chunksOf(entry))
        for (let at = 0; at < chunk.length; at = AttemptRecordCodec.next(chunk, at))
          identities.add(codec.identityOf(chunk, at));
      entry.identities = identities;
    }
    return false;
  }

  function add(entry: KeyAttempts, record: string): void {
    // Flat, so that the chunk costs its characters, not a rope of one string per attempt.
    entry.records = flat(entry.records + record);
    if (entry.records.length >= CHUNK_CHARS) {
      (entry.chunks ??= []).push(entry.records);
      entry.records = '';
    }
    entry.count++;
  }

  function decode(entry: KeyAttempts): Attempt[] {
    const out: Attempt[] = [];
    for (const chunk of chunksOf(entry)) codec.decodeInto(chunk, entry.key, out);
    return out;
  }

  /** Re-encodes every key with tables holding only the names and placements still used. */
  function compact(): void {
    const decoded = [...byKey].map(([partitionKey, entry]) => [partitionKey, entry, decode(entry)] as const);
    codec.reset();
    const fresh = new Map<string, KeyAttempts>();
    for (const [partitionKey, entry, list] of decoded) {
      const copy = new KeyAttempts(entry.key, entry.lastSeenUnixMillis);
      copy.identities = entry.identities;
      for (const attempt of list) add(copy, codec.encode(attempt, copy.key));
      fresh.set(partitionKey, copy);
    }
    byKey = fresh;
    tableLimit = Math.max(MIN_TABLE_LIMIT, 2 * codec.tableSize);
  }

  return {
    append(partitionKey, attempt) {
      let entry = byKey.get(partitionKey);
      if (entry === undefined) {
        entry = new KeyAttempts(attempt.key, attempt.endUnixMillis);
        const record = codec.encode(attempt, entry.key);
        byKey.set(partitionKey, entry);
        add(entry, record);
        attempts++;
        return true;
      }
      const record = codec.encode(attempt, entry.key);
      if (isRedelivery(entry, record)) return false;
      add(entry, record);
      attempts++;
      if (attempt.endUnixMillis > entry.lastSeenUnixMillis) entry.lastSeenUnixMillis = attempt.endUnixMillis;
      // Last appended last: what `expire` sweeps from the front.
      byKey.delete(partitionKey);
      byKey.set(partitionKey, entry);
      return true;
    },
    attemptsOf(partitionKey) {
      const entry = byKey.get(partitionKey);
      return entry === undefined ? [] : decode(entry);
    },
    expire(beforeUnixMillis) {
      for (const [partitionKey, entry] of byKey) {
        if (entry.lastSeenUnixMillis >= beforeUnixMillis) break;
        byKey.delete(partitionKey);
        attempts -= entry.count;
        forgotten = true;
      }
      // Only forgetting keys leaves names unused: without, compacting would only cost.
      if (forgotten && codec.tableSize > tableLimit) {
        compact();
        forgotten = false;
      }
    },
    stats() {
      let recordBytes = 0;
      for (const entry of byKey.values()) for (const chunk of chunksOf(entry)) recordBytes += chunk.length;
      return { keys: byKey.size, attempts, recordBytes, names: codec.tableSize };
    },
  };
}

function* chunksOf(entry: KeyAttempts): Generator<string> {
  if (entry.chunks !== null) yield* entry.chunks;
  if (entry.records !== '') yield entry.records;
}

/**
 * The string with its characters in one piece: a concatenation is a rope until something reads
 * it, and the next append may not (a new key's first record is not compared with anything).
 */
function flat(text: string): string {
  // Reading a character makes V8 flatten the rope in place.
  text.charCodeAt(0);
  return text;
}
