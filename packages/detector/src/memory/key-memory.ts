import type { Attempt } from '@keyscope/attempts';
import type { DetectorConfig } from '../config.ts';
import { coversKey } from '../coverage/evidence-coverage.ts';
import type { ScopeReport } from '../coverage/scope-report.ts';
import { mayHideExecution } from '../rules/unseen-execution.ts';
import { tierName } from '../tier-name.ts';
import type { AttemptLog } from './attempt-log.ts';
import { Interner } from './interner.ts';
import { KeyTable, OBSERVED_FIRST_AT_TIER, OBSERVED_SUSPECT } from './key-table.ts';

/** Names the interner may hold before it is first compacted. */
const MIN_INTERNER_LIMIT = 65_536;

/**
 * The detector's compact memory of the keys it has seen (docs/design.md, "Memory per key"): a
 * slot per key in a KeyTable, the names its slots refer to in an Interner, at most `maxKeys` keys.
 *
 * Contract: a key not in memory is rebuilt by `slotOf` from the attempts the AttemptLog holds (its
 * history was counted into the scope report when it arrived, so a rebuild counts nothing there);
 * past `maxKeys` the least recently touched keys are forgotten down to nine tenths of it (one, at the least). Every key
 * forgotten — evicted or past the horizon — is announced to `onForget` with the slot it held,
 * before the slot can be handed to another key. A key that reached `maxAttemptsPerKey` (a hot key)
 * keeps no more attempts: `admit` refuses them and counts them.
 */
export class KeyMemory {
  readonly #keys: KeyTable;
  #interner = new Interner();
  /** Names interned before the interner is compacted (see `compactInterner`). */
  #internerLimit = MIN_INTERNER_LIMIT;
  readonly #maxKeys: number;
  readonly #coverageKeysOneIn: number;
  readonly #log: AttemptLog;
  readonly #scopes: ScopeReport;
  readonly #onForget: (partitionKey: string, slot: number) => void;
  #evictedKeys = 0;
  #rebuiltKeys = 0;
  #cappedAttempts = 0;

  constructor(
    config: Pick<DetectorConfig, 'maxKeys' | 'maxAttemptsPerKey' | 'coverageKeysOneIn'>,
    log: AttemptLog,
    scopes: ScopeReport,
    onForget: (partitionKey: string, slot: number) => void,
  ) {
    this.#keys = new KeyTable(config.maxAttemptsPerKey);
    this.#maxKeys = config.maxKeys;
    this.#coverageKeysOneIn = config.coverageKeysOneIn;
    this.#log = log;
    this.#scopes = scopes;
    this.#onForget = onForget;
  }

  /** The key's slot, touched; when the key is not in memory, rebuilt from the attempts the log holds. */
  slotOf(partitionKey: string): number {
    const keys = this.#keys;
    const known = keys.find(partitionKey);
    if (known !== undefined) return known;
    const slot = keys.add(partitionKey);
    if (coversKey(partitionKey, this.#coverageKeysOneIn)) keys.markCovered(slot);
    let replayed = 0;
    for (const attempt of this.#log.attemptsOf(partitionKey)) {
      this.#observe(slot, attempt, false);
      replayed++;
    }
    if (replayed > 0) this.#rebuiltKeys++;
    if (keys.size > this.#maxKeys) this.#evictOldest();
    return slot;
  }

  /**
   * Whether the slot's key keeps another attempt: false for a hot key, one that reached
   * `maxAttemptsPerKey`, whose attempt is then counted in `cappedAttempts`.
   */
  admit(slot: number): boolean {
    if (!this.#keys.isCapped(slot)) return true;
    this.#cappedAttempts++;
    return false;
  }

  /**
   * Counts a newly arrived attempt into the key's compact state, and into the scope report (its
   * tier, and the key at each tier it first reaches); true when the key needs judging from its
   * full evidence (it is suspect).
   */
  observe(slot: number, attempt: Attempt): boolean {
    return this.#observe(slot, attempt, true);
  }

  /** Whether the slot's key is in the evidence coverage's sample (`coversKey`). */
  isCovered(slot: number): boolean {
    return this.#keys.isCovered(slot);
  }

  /** Attempts the slot's key has observed. */
  attemptsAt(slot: number): number {
    return this.#keys.attemptsAt(slot);
  }

  /** Attempts the key has observed (0 when it is not in memory). */
  attemptCount(partitionKey: string): number {
    return this.#keys.attemptCount(partitionKey);
  }

  /** The latest end of the key's attempts; -Infinity when it is not in memory. */
  lastSeen(partitionKey: string): number {
    return this.#keys.lastSeen(partitionKey);
  }

  /** Forgets the keys last seen before `cutoff` (their attempts stay in the log until it expires them). */
  forgetBefore(cutoff: number): void {
    // Least recently touched first: in a live pipeline that is oldest event time first, so the
    // sweep stops at the first key still within the horizon instead of visiting millions.
    const expired: string[] = [];
    for (const partitionKey of this.#keys.keys()) {
      if (this.#keys.lastSeen(partitionKey) >= cutoff) break;
      expired.push(partitionKey);
    }
    for (const partitionKey of expired) this.#forget(partitionKey);
  }

  /**
   * Names of tiers, nodes and tenants would otherwise accumulate for the life of the process (pods
   * come and go with every deploy; tenants can number millions). Once the interner holds twice the
   * names the keys in memory used at the last compaction, it is rebuilt with only those in use.
   */
  compactInterner(): void {
    const interner = this.#interner;
    if (interner.size <= this.#internerLimit) return;
    const fresh = new Interner();
    const remapped = new Int32Array(interner.size).fill(-1);
    this.#keys.remapInterned((id) => {
      let next = remapped[id]!;
      if (next === -1) remapped[id] = next = fresh.id(interner.name(id));
      return next;
    });
    this.#interner = fresh;
    this.#internerLimit = Math.max(MIN_INTERNER_LIMIT, 2 * fresh.size);
  }

  get size(): number {
    return this.#keys.size;
  }

  /** Keys in memory that reached `maxAttemptsPerKey`. */
  get hotKeys(): number {
    return this.#keys.cappedKeys;
  }

  /** Keys forgotten beyond `maxKeys`. */
  get evictedKeys(): number {
    return this.#evictedKeys;
  }

  /** Keys rebuilt from the log that held attempts of them. */
  get rebuiltKeys(): number {
    return this.#rebuiltKeys;
  }

  /** Attempts `admit` refused. */
  get cappedAttempts(): number {
    return this.#cappedAttempts;
  }

  /** Tier, node and tenant names held for the keys in memory (and some since forgotten). */
  get internedNames(): number {
    return this.#interner.size;
  }

  /**
   * Updates the key's compact state; true when the key needs judging from its full evidence.
   * `fresh` is false when replaying a rebuilt key's history, which the scope report already counted.
   */
  #observe(slot: number, attempt: Attempt, fresh: boolean): boolean {
    const keys = this.#keys;
    const interner = this.#interner;
    const scopes = this.#scopes;
    const tenant = attempt.tenant === '' ? -1 : interner.id(attempt.tenant);
    if (mayHideExecution(attempt)) keys.markSuspect(slot);
    // A side effect lands at no tier, like a client send; a suspect key is judged again with it.
    if (attempt.kind === 'client' || attempt.kind === 'effect')
      return (keys.observe(slot, attempt.endUnixMillis, tenant, -1, -1, false) & OBSERVED_SUSPECT) !== 0;
    const { service, node } = attempt.placement;
    // Past `maxTiers` the tier's aggregates are the overflow bucket's; the key is judged at its own tier all the same.
    const stats = fresh ? scopes.tierAt(service, attempt.operation, true) : undefined;
    // A tier's row holds its name; one in the overflow bucket, or a replayed attempt's, is named here.
    const tier =
      stats !== undefined && !scopes.isOverflow(stats) ? stats.tier : tierName(service, attempt.operation);
    if (stats !== undefined && attempt.kind === 'server') scopes.decided(stats, attempt);
    const observed = keys.observe(
      slot,
      attempt.endUnixMillis,
      tenant,
      interner.id(tier),
      interner.id(node),
      attempt.kind === 'server',
    );
    if (stats !== undefined && (observed & OBSERVED_FIRST_AT_TIER) !== 0) scopes.keySeen(stats);
    return (observed & OBSERVED_SUSPECT) !== 0;
  }

  #evictOldest(): void {
    const keys = this.#keys;
    // At least the key just added stays: it is the one being counted.
    const target = Math.max(1, Math.floor(this.#maxKeys * 0.9));
    const victims: string[] = [];
    for (const partitionKey of keys.keys()) {
      if (keys.size - victims.length <= target) break;
      victims.push(partitionKey);
    }
    for (const partitionKey of victims) this.#forget(partitionKey);
    this.#evictedKeys += victims.length;
  }

  /** Drops the key's compact state (its attempts stay in the log, to rebuild it from). */
  #forget(partitionKey: string): void {
    const slot = this.#keys.peek(partitionKey);
    if (slot !== undefined) this.#onForget(partitionKey, slot);
    this.#keys.delete(partitionKey);
  }
}
