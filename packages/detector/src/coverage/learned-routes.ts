import type { TierCounts } from './key-window.ts';

/**
 * Routes are learned from one counted key in this many: a route's tier shows in every key sent on
 * it, and looking it up for every key would cost more than the rest of the key's count.
 */
const LEARN_EVERY = 16;
/** (client service, target) pairs learned; past it, unanswered sends on new pairs count nowhere. */
const MAX_ROUTES = 10_000;

/**
 * Where answered sends from a client service to a target landed, learned across keys: the tier an
 * unanswered send of a key with no answered send on its route belongs to. A tier, or null when such
 * sends landed at several.
 */
export class LearnedRoutes {
  private readonly routes = new Map<string, Map<string, TierCounts | null>>();
  private routeCount = 0;
  /** Keys counted since a route was last learned. */
  private sinceLearned = 0;
  /** The route `learn` last confirmed. */
  private learnedService = '';
  private learnedTarget = '';
  private learnedTier: TierCounts | null = null;

  /** Called once per counted key: whether the key's answered routes are to be learned. */
  learnsFromKey(): boolean {
    return ++this.sinceLearned >= LEARN_EVERY;
  }

  learn(service: string, target: string, tier: TierCounts): void {
    this.sinceLearned = 0;
    if (tier === this.learnedTier && service === this.learnedService && target === this.learnedTarget) return;
    let byTarget = this.routes.get(service);
    const known = byTarget?.get(target);
    if (known === undefined) {
      if (this.routeCount >= MAX_ROUTES) return;
      if (byTarget === undefined) this.routes.set(service, (byTarget = new Map()));
      byTarget.set(target, tier);
      this.routeCount++;
    } else if (known !== tier) {
      if (known !== null) byTarget!.set(target, null);
      return;
    }
    this.learnedService = service;
    this.learnedTarget = target;
    this.learnedTier = tier;
  }

  /** The tier learned for the route; null when its sends landed at several, undefined when none is known. */
  tierOf(service: string, target: string): TierCounts | null | undefined {
    return this.routes.get(service)?.get(target);
  }
}
