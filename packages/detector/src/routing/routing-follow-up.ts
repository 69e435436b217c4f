import type { Attempt } from '@keyscope/attempts';
import { mayHideExecution } from '../rules/unseen-execution.ts';

/** A followed key: the services its requests landed at, and when its attempts ran. */
interface FollowedKey {
  readonly services: Set<string>;
  readonly firstUnixMillis: number;
  readonly lastUnixMillis: number;
}

/** Windows of routing events (start, end) that appeared, moved or disappeared, per service. */
export type ChangedWindows = ReadonlyMap<string, readonly (readonly [number, number])[]>;

/**
 * Keys with a mark of an execution whose spans may have been lost (a send without an answer,
 * unseen-execution.ts), which only a routing event inferred later can make evidence: they are
 * judged again whenever a routing event of their services whose window (widened by the routing
 * slack) meets their attempts appears, moves or disappears, for as long as the key is within the
 * retry horizon. Activity can arrive late by any amount within the horizon (a shuffled backlog, a
 * redelivery), and the events it revises revise these keys' findings with them.
 *
 * Contract: `follow` is told every judgement of a key and follows it while its evidence holds such
 * a mark. At most `maxKeys` keys are followed: past that, the least recently judged are dropped and
 * counted in `dropped`, and a routing event inferred later no longer revises their findings.
 */
export class RoutingFollowUp {
  /** In order of judgement, least recent first. */
  readonly #keys = new Map<string, FollowedKey>();
  readonly #maxKeys: number;
  readonly #slackMillis: number;
  #dropped = 0;

  constructor(maxKeys: number, routingSlackMillis: number) {
    this.#maxKeys = maxKeys;
    this.#slackMillis = routingSlackMillis;
  }

  /** The key was judged on `evidence`, every attempt of it: followed while it holds a mark. */
  follow(partitionKey: string, evidence: readonly Attempt[]): void {
    const keys = this.#keys;
    if (!evidence.some(mayHideExecution)) {
      keys.delete(partitionKey);
      return;
    }
    const services = new Set<string>();
    let firstUnixMillis = Number.POSITIVE_INFINITY;
    let lastUnixMillis = Number.NEGATIVE_INFINITY;
    for (const attempt of evidence) {
      if (attempt.kind === 'server' || attempt.kind === 'arrival') services.add(attempt.placement.service);
      if (attempt.startUnixMillis < firstUnixMillis) firstUnixMillis = attempt.startUnixMillis;
      if (attempt.endUnixMillis > lastUnixMillis) lastUnixMillis = attempt.endUnixMillis;
    }
    // Deleted first so that the map's order stays least recently judged first.
    keys.delete(partitionKey);
    keys.set(partitionKey, { services, firstUnixMillis, lastUnixMillis });
    if (keys.size > this.#maxKeys) {
      for (const oldest of keys.keys()) {
        keys.delete(oldest);
        this.#dropped++;
        if (keys.size <= this.#maxKeys) break;
      }
    }
  }

  /**
   * Adds to `into` the followed keys of a service with a changed window that meets their
   * attempts: what unseen-execution.ts reads of an event lies within the routing slack of a mark's time.
   */
  keysNear(changed: ChangedWindows, into: Set<string>): void {
    const slack = this.#slackMillis;
    for (const [partitionKey, { services, firstUnixMillis, lastUnixMillis }] of this.#keys) {
      for (const service of services) {
        const windows = changed.get(service);
        if (
          windows?.some(([start, end]) => start - slack <= lastUnixMillis && end + slack >= firstUnixMillis)
        )
          into.add(partitionKey);
      }
    }
  }

  /** Stops following the keys whose attempts all ended before `cutoff`. */
  forgetBefore(cutoff: number): void {
    for (const [partitionKey, { lastUnixMillis }] of this.#keys)
      if (lastUnixMillis < cutoff) this.#keys.delete(partitionKey);
  }

  has(partitionKey: string): boolean {
    return this.#keys.has(partitionKey);
  }

  /** Keys followed. */
  get size(): number {
    return this.#keys.size;
  }

  /** Keys dropped because `maxKeys` were followed. */
  get dropped(): number {
    return this.#dropped;
  }
}
