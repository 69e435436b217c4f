import type { FindingClass } from './finding.ts';

/**
 * What the detector remembers about one key between batches, kept small because a pipeline
 * tracks millions of keys: most keys are one request executed once, and need only enough to
 * notice when that stops being true (a second attempt at the same tier, a second node, a second
 * tenant). Such a key becomes *suspect*; from then on every attempt of it re-judges the key from
 * the AttemptLog.
 *
 * Two tiers fit inline (a front service and one downstream); a key seen at more is suspect.
 * Numbers are interned ids from `Interner`, valid only within one detector's lifetime: what
 * leaves the process (`PersistedKeyState`) carries strings.
 */
export class KeyState {
  lastSeenUnixMillis = 0;
  tierA = -1;
  countA = 0;
  nodeA = -1;
  tierB = -1;
  countB = 0;
  nodeB = -1;
  tenant = -1;
  suspect = false;
  /** Findings currently reported for this key, by class, with a signature to tell changes. */
  reported: Map<FindingClass, string> | null = null;
}

/** A key's state as it is written to a KeyStateStore (spilled, or kept across restarts). */
export interface PersistedKeyState {
  partitionKey: string;
  lastSeenUnixMillis: number;
  tiers: { tier: string; count: number; node: string }[];
  tenant: string;
  suspect: boolean;
  reported: [FindingClass, string][];
}

/**
 * Where keys go when more than `maxKeys` are tracked, and where they come back from. The
 * embedded service backs it with SQLite; the default keeps them in a Map (unbounded — fine for
 * tests and `analyze`). Synchronous by design: it is called on the ingest path.
 */
export interface KeyStateStore {
  load(partitionKey: string): PersistedKeyState | undefined;
  save(states: readonly PersistedKeyState[]): void;
  delete(partitionKeys: readonly string[]): void;
  /** Forgets keys last seen before this time. */
  expire(beforeUnixMillis: number): void;
}

export function createMemoryKeyStateStore(): KeyStateStore {
  const states = new Map<string, PersistedKeyState>();
  return {
    load: (partitionKey) => states.get(partitionKey),
    save(list) {
      for (const state of list) states.set(state.partitionKey, state);
    },
    delete(keys) {
      for (const key of keys) states.delete(key);
    },
    expire(before) {
      for (const [key, state] of states) if (state.lastSeenUnixMillis < before) states.delete(key);
    },
  };
}

/** Strings ↔ small integers, so per-key state holds numbers instead of repeated strings. */
export class Interner {
  private readonly ids = new Map<string, number>();
  private readonly names: string[] = [];

  id(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.ids.set(name, id);
    }
    return id;
  }

  name(id: number): string {
    return id < 0 ? '' : this.names[id]!;
  }
}

export function persistKeyState(
  partitionKey: string,
  state: KeyState,
  interner: Interner,
): PersistedKeyState {
  const tiers: PersistedKeyState['tiers'] = [];
  if (state.tierA >= 0)
    tiers.push({ tier: interner.name(state.tierA), count: state.countA, node: interner.name(state.nodeA) });
  if (state.tierB >= 0)
    tiers.push({ tier: interner.name(state.tierB), count: state.countB, node: interner.name(state.nodeB) });
  return {
    partitionKey,
    lastSeenUnixMillis: state.lastSeenUnixMillis,
    tiers,
    tenant: interner.name(state.tenant),
    suspect: state.suspect,
    reported: state.reported === null ? [] : [...state.reported],
  };
}

export function restoreKeyState(persisted: PersistedKeyState, interner: Interner): KeyState {
  const state = new KeyState();
  state.lastSeenUnixMillis = persisted.lastSeenUnixMillis;
  const [a, b] = persisted.tiers;
  if (a !== undefined) {
    state.tierA = interner.id(a.tier);
    state.countA = a.count;
    state.nodeA = interner.id(a.node);
  }
  if (b !== undefined) {
    state.tierB = interner.id(b.tier);
    state.countB = b.count;
    state.nodeB = interner.id(b.node);
  }
  state.tenant = persisted.tenant === '' ? -1 : interner.id(persisted.tenant);
  state.suspect = persisted.suspect;
  state.reported = persisted.reported.length === 0 ? null : new Map(persisted.reported);
  return state;
}
