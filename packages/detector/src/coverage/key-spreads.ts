import type { Attempt } from '@keyscope/attempts';
import { tierName } from '../tier-name.ts';
import { type ScopeReport, type SpreadLevel, spreadOf } from './scope-report.ts';

/** A judged key's spread at each tier it landed at, and the latest end of its attempts. */
interface KeySpread {
  lastSeenUnixMillis: number;
  readonly tiers: Map<string, SpreadLevel>;
}

/**
 * How far each judged (suspect) key spread at each of its tiers — node, cluster, region — as the
 * scope report last counted it. A key never judged counts as spread over one node.
 *
 * Contract: `update` moves the key's count in the scope report from the spread counted before to
 * the one its evidence shows now, so each key is counted once per tier however often it is
 * judged; `forgetBefore` forgets keys whose attempts all ended before the cutoff, leaving the scope
 * report as it is.
 */
export class KeySpreads {
  readonly #scopes: ScopeReport;
  readonly #byKey = new Map<string, KeySpread>();

  constructor(scopes: ScopeReport) {
    this.#scopes = scopes;
  }

  /**
   * Counts the key's spread at each tier its `evidence` (every attempt of it) landed at. `unseen`:
   * nodes where the key's findings say an execution ran whose spans were lost (a suspect's
   * evidence), by tier: a node there that no attempt landed on is one the key's retries crossed to.
   */
  update(
    partitionKey: string,
    evidence: readonly Attempt[],
    unseen?: ReadonlyMap<string, readonly string[]>,
  ): void {
    const byTier = new Map<string, Attempt[]>();
    for (const attempt of evidence) {
      if (attempt.kind === 'client' || attempt.kind === 'effect') continue;
      const name = tierName(attempt.placement.service, attempt.operation);
      const list = byTier.get(name);
      if (list === undefined) byTier.set(name, [attempt]);
      else list.push(attempt);
    }
    let known = this.#byKey.get(partitionKey);
    if (known === undefined)
      this.#byKey.set(partitionKey, (known = { lastSeenUnixMillis: 0, tiers: new Map() }));
    for (const attempt of evidence) {
      if (attempt.endUnixMillis > known.lastSeenUnixMillis) known.lastSeenUnixMillis = attempt.endUnixMillis;
    }
    for (const [name, landed] of byTier) {
      let spread = spreadOf(landed);
      const nodes = unseen?.get(name);
      if (
        spread === 'node' &&
        nodes !== undefined &&
        nodes.some((node) => !landed.some((a) => a.placement.node === node))
      )
        spread = 'cluster';
      this.#scopes.spreadChanged(name, known.tiers.get(name) ?? 'node', spread);
      known.tiers.set(name, spread);
    }
  }

  forgetBefore(cutoff: number): void {
    for (const [partitionKey, known] of this.#byKey)
      if (known.lastSeenUnixMillis < cutoff) this.#byKey.delete(partitionKey);
  }

  /** Keys whose spread is counted: the keys judged within the horizon. */
  get size(): number {
    return this.#byKey.size;
  }
}
