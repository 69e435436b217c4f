import type { FailureSchedule } from './failure-schedule.ts';
import type { Prng } from './prng.ts';
import type { Scenario } from './scenario.ts';
import type { SimNode, SimService, Topology } from './topology.ts';

/** The world one run shares between mutation flows and ordinary traffic. Read-only but for `rng`. */
export interface SimContext {
  scenario: Scenario;
  topology: Topology;
  schedule: FailureSchedule;
  /** Traffic draws, in generation order. */
  rng: Prng;
}

/** One-way network delay: sub-millisecond inside a region, tens of milliseconds across regions. */
export function networkDelayMillis(ctx: SimContext, from: SimNode, to: SimNode): number {
  return from.region === to.region ? ctx.rng.between(0.2, 1.2) : ctx.rng.between(18, 35);
}

/** A node of `service` that is up at `t` (the one that starts a user request or a job). */
export function pickLiveNode(ctx: SimContext, service: SimService, t: number): SimNode {
  const live = service.nodes.filter((node) => !ctx.schedule.outageAt(node, t));
  return ctx.rng.pick(live.length > 0 ? live : service.nodes);
}

const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  'shop-android/5.12.0 okhttp/4.12.0',
];

export function userAgent(ctx: SimContext): string {
  return ctx.rng.pick(USER_AGENTS);
}

/** A public client address, as the caller's ingress reports it. */
export function publicAddress(ctx: SimContext): string {
  const rng = ctx.rng;
  return `${rng.int(11, 223)}.${rng.int(0, 256)}.${rng.int(0, 256)}.${rng.int(1, 255)}`;
}

/** What services put in `user_agent.original` when they call each other. */
export const SERVICE_USER_AGENT = 'undici';
