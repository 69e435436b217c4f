/**
 * The storage a gate needs: four operations, each atomic on one key. An adapter for another
 * database is small because nothing else is asked of it:
 *
 * - Redis: one hash per key with a PX expiry; `insertIfAbsent` is `SET key … NX PX ttl` (or a
 *   short Lua script that also returns the existing hash); `complete` and `release` are Lua
 *   scripts that compare `owner` before writing or deleting.
 * - Postgres: a table keyed by `key`; `insertIfAbsent` is `INSERT … ON CONFLICT (key) DO UPDATE …
 *   WHERE expires_at <= now` (which takes over an expired row) followed by a `SELECT` of the
 *   winner; `complete` / `release` are `UPDATE` / `DELETE … WHERE key = $1 AND owner = $2 AND
 *   state = 'in_progress'`; a periodic `DELETE … WHERE expires_at <= now` reclaims space.
 *
 * Time comes from the gate (`nowUnixMillis`, `expiresAtUnixMillis`) so every store agrees with the
 * gate's clock; an adapter whose database keeps its own TTLs converts to `expiresAt - now`.
 * A store that cannot answer rejects; the gate then fails closed (503), it never executes blind.
 */
export interface DedupStore {
  /**
   * If `key` has no live record (none, or one whose `expiresAtUnixMillis <= nowUnixMillis`),
   * stores `record` and resolves null: the caller owns the key and executes. Otherwise resolves
   * the live record, unchanged. Must be atomic: of two concurrent calls for one key, exactly one
   * resolves null.
   */
  insertIfAbsent(key: string, record: InProgressRecord, nowUnixMillis: number): Promise<DedupRecord | null>;

  /**
   * Turns the in-progress record of `owner` into a completed one holding `response`, live until
   * `expiresAtUnixMillis`. Resolves false (and writes nothing) when the key is no longer `owner`'s
   * in-progress record: its lock expired and another execution took it over.
   */
  complete(key: string, owner: string, response: string, expiresAtUnixMillis: number): Promise<boolean>;

  /**
   * Deletes the in-progress record of `owner`, so a retry can execute. Resolves false (and deletes
   * nothing) when the key is no longer `owner`'s in-progress record.
   */
  release(key: string, owner: string): Promise<boolean>;

  /** The live record of `key`, or null. */
  lookup(key: string, nowUnixMillis: number): Promise<DedupRecord | null>;
}

export interface InProgressRecord {
  readonly state: 'in_progress';
  /** Identifies the payload the key was first used with; another one is a 422. */
  readonly fingerprint: string;
  /** A token unique to one execution: completion and release only act on their own record. */
  readonly owner: string;
  /** When a retry may take over a lock whose owner never finished (it crashed). */
  readonly expiresAtUnixMillis: number;
}

export interface CompletedRecord {
  readonly state: 'completed';
  readonly fingerprint: string;
  readonly owner: string;
  /** Opaque to the store: the adapter's encoding of what to replay. */
  readonly response: string;
  readonly expiresAtUnixMillis: number;
}

export type DedupRecord = InProgressRecord | CompletedRecord;
