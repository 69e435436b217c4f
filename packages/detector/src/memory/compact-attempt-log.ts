import type { Attempt } from '@keyscope/attempts';
import type { AttemptLog } from './attempt-log.ts';
import { AttemptRecords, NO_RECORD } from './attempt-records.ts';

/** What the compact log holds, for measuring it. */
export interface CompactAttemptLogStats {
  keys: number;
  attempts: number;
  /** Bytes of the keys' records, their chunks' free space and identity sets not included. */
  recordBytes: number;
  /** Bytes of the chunks the records are in, expired records' and free space included. */
  chunkBytes: number;
  /** Names and placements interned. */
  names: number;
}

export interface CompactAttemptLog extends AttemptLog {
  stats(): CompactAttemptLogStats;
}

/**
 * Keys with more attempts than this check redelivery against a set of their identities; below,
 * reading their records is cheaper than a set per key (an empty Set alone is ~150 bytes).
 */
const IDENTITY_SET_ATTEMPTS = 32;
/** Names and placements interned, or bytes of records, before `expire` first compacts them. */
const MIN_TABLE_LIMIT = 65_536;
const MIN_CHUNK_LIMIT_BYTES = 64 << 20;

class KeyAttempts {
  /** The position of the key's last record (see AttemptRecords). */
  last = NO_RECORD;
  count = 0;
  bytes = 0;
  identities: Set<string> | null = null;

  constructor(
    /** The first attempt's key: records of attempts with the same key do not repeat it. */
    readonly key: string,
    public lastSeenUnixMillis: number,
  ) {}
}

/**
 * The log `keyscope analyze` keeps: everything in memory, each attempt a record of about
 * 60 bytes (attempt-records.ts) and each key about 120 (its entry here), where the memory log's
 * attempt objects with their strings and a Set of span ids cost ~460 an attempt. Appending and
 * reading back cost more than the memory log's (~0.7 µs an append against ~0.3, ~1 µs an attempt
 * read), which is why the detector's default is the memory log. `expire` visits every key,
 * unless no key was last seen before its cutoff (an archive within the retry horizon). Once
 * `expire` has forgotten keys and the names and placements number twice what they did after the
 * last compaction, or the records' chunks hold twice the bytes of the records still kept (past
 * minimums), every key is written again into fresh chunks and tables.
 */
export function createCompactAttemptLog(): CompactAttemptLog {
  let records = new AttemptRecords();
  let byKey = new Map<string, KeyAttempts>();
  let attempts = 0;
  let liveBytes = 0;
  /** No key was last seen before this. */
  let oldestLastSeenUnixMillis = Number.POSITIVE_INFINITY;
  let tableLimit = MIN_TABLE_LIMIT;
  /** Whether keys were forgotten since the last compaction. */
  let forgotten = false;

  function isRedelivery(entry: KeyAttempts, position: number): boolean {
    if (entry.identities === null && entry.count >= IDENTITY_SET_ATTEMPTS) {
      const identities = new Set<string>();
      for (let at = entry.last; at !== NO_RECORD; at = records.previous(at))
        identities.add(records.identityOf(at));
      entry.identities = identities;
    }
    if (entry.identities !== null) {
      const identity = records.identityOf(position);
      if (entry.identities.has(identity)) return true;
      entry.identities.add(identity);
      return false;
    }
    for (let at = entry.last; at !== NO_RECORD; at = records.previous(at))
      if (records.sameIdsAsWritten(at)) return true;
    return false;
  }

  /** Appends `attempt` to the key's records unless one of them has its ids. */
  function add(entry: KeyAttempts, attempt: Attempt): boolean {
    const position = records.write(attempt, entry.key, entry.last);
    if (entry.last !== NO_RECORD && isRedelivery(entry, position)) {
      records.unwrite(position);
      return false;
    }
    const bytes = records.writtenBytes(position);
    entry.last = position;
    entry.count++;
    entry.bytes += bytes;
    liveBytes += bytes;
    return true;
  }

  function decode(entry: KeyAttempts, from = records): Attempt[] {
    const positions: number[] = [];
    for (let at = entry.last; at !== NO_RECORD; at = from.previous(at)) positions.push(at);
    const out: Attempt[] = new Array(positions.length);
    for (let i = 0; i < positions.length; i++)
      out[i] = from.read(positions[positions.length - 1 - i]!, entry.key);
    return out;
  }

  /**
   * Writes every key again into fresh records and tables, holding only what is still used; a key
   * at a time, so that no more than one key's attempts are objects at once.
   */
  function compact(): void {
    const old = records;
    records = new AttemptRecords();
    liveBytes = 0;
    const fresh = new Map<string, KeyAttempts>();
    for (const [partitionKey, entry] of byKey) {
      const copy = new KeyAttempts(entry.key, entry.lastSeenUnixMillis);
      for (const attempt of decode(entry, old)) add(copy, attempt);
      fresh.set(partitionKey, copy);
    }
    byKey = fresh;
    tableLimit = Math.max(MIN_TABLE_LIMIT, 2 * records.tableSize);
  }

  return {
    append(partitionKey, attempt) {
      let entry = byKey.get(partitionKey);
      if (entry === undefined) {
        entry = new KeyAttempts(attempt.key, attempt.endUnixMillis);
        byKey.set(partitionKey, entry);
      }
      if (!add(entry, attempt)) return false;
      attempts++;
      if (attempt.endUnixMillis > entry.lastSeenUnixMillis) entry.lastSeenUnixMillis = attempt.endUnixMillis;
      if (entry.lastSeenUnixMillis < oldestLastSeenUnixMillis)
        oldestLastSeenUnixMillis = entry.lastSeenUnixMillis;
      return true;
    },
    attemptsOf(partitionKey) {
      const entry = byKey.get(partitionKey);
      return entry === undefined ? [] : decode(entry);
    },
    expire(beforeUnixMillis) {
      if (!(beforeUnixMillis > oldestLastSeenUnixMillis)) return;
      let oldest = Number.POSITIVE_INFINITY;
      for (const [partitionKey, entry] of byKey) {
        if (entry.lastSeenUnixMillis < beforeUnixMillis) {
          byKey.delete(partitionKey);
          attempts -= entry.count;
          liveBytes -= entry.bytes;
          forgotten = true;
        } else if (entry.lastSeenUnixMillis < oldest) oldest = entry.lastSeenUnixMillis;
      }
      oldestLastSeenUnixMillis = oldest;
      // Only forgetting keys leaves names and chunks unused: without, compacting would only cost.
      if (!forgotten) return;
      const chunkBytes = records.chunkBytes;
      if (records.tableSize > tableLimit || chunkBytes > Math.max(MIN_CHUNK_LIMIT_BYTES, 2 * liveBytes)) {
        compact();
        forgotten = false;
      }
    },
    stats() {
      return {
        keys: byKey.size,
        attempts,
        recordBytes: liveBytes,
        chunkBytes: records.chunkBytes,
        names: records.tableSize,
      };
    },
  };
}
