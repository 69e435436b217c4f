/**
 * What the detector remembers about one key between batches, kept small because a pipeline
 * tracks millions of keys: most keys are one request executed once, and need only enough to
 * notice when that stops being true (a second attempt at the same tier, a second node, a second
 * tenant). Such a key becomes *suspect*; from then on every attempt of it re-judges the key from
 * the AttemptLog.
 *
 * Two tiers fit inline (a front service and one downstream); a key seen at more is suspect.
 * Numbers are interned ids from `Interner`, valid only within one detector's lifetime.
 *
 * Nothing here needs persisting: the AttemptLog holds every attempt of the key, so a key that was
 * evicted from memory (beyond `maxKeys`) or lost in a restart is rebuilt by replaying its attempts.
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
