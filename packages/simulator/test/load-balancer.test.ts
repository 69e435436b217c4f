import { describe, expect, it } from 'vitest';
import { FailureSchedule } from '../src/failure-schedule.ts';
import { scenarios } from '../src/index.ts';
import { routeRequest } from '../src/load-balancer.ts';
import { Prng } from '../src/prng.ts';
import type { FailureSpec, RoutingSpec } from '../src/scenario.ts';
import { buildTopology } from '../src/topology.ts';

const START = scenarios.DEFAULT_START_UNIX_MILLIS;

function world(failures: FailureSpec[], routing: Partial<RoutingSpec> = {}) {
  const scenario = scenarios.nodeFailover({ failures });
  Object.assign(scenario.services[0]!.routing, routing);
  const topology = buildTopology(scenario, new Prng(1));
  const schedule = new FailureSchedule(scenario, topology, new Prng(1));
  const payments = topology.services.get('payments')!;
  const caller = topology.caller.nodes[0]!;
  const rng = new Prng(2);
  const route = (
    atUnixMillis: number,
    extra: { session?: number; pinned?: (typeof payments.nodes)[0] } = {},
  ) =>
    routeRequest(
      {
        service: payments,
        routing: scenario.services[0]!.routing,
        from: caller,
        atUnixMillis,
        session: extra.session ?? 7,
        ...(extra.pinned ? { pinned: extra.pinned } : {}),
      },
      topology,
      schedule,
      rng,
    );
  return { payments, caller, route };
}

describe('routeRequest', () => {
  it('keeps a session on one node of the caller’s cluster', () => {
    const { caller, route } = world([]);
    const first = route(START).node;
    expect(first.cluster).toBe(caller.cluster);
    for (let i = 1; i < 20; i++) expect(route(START + i * 1000).node).toBe(first);
  });

  it('keeps sending to a failed node until the failure is detected, then moves within the cluster', () => {
    const { route } = world([]);
    const affine = route(START).node;
    const failed = world([
      {
        type: 'node_down',
        service: 'payments',
        node: affine.index,
        startOffsetMillis: 1000,
        durationMillis: 5000,
      },
    ]);
    // Each world builds its own topology: compare nodes by id.
    expect(failed.route(START + 1200).node.instanceId).toBe(affine.instanceId);
    const moved = failed.route(START + 1000 + 1500);
    expect(moved.node.instanceId).not.toBe(affine.instanceId);
    expect(moved.node.cluster).toBe(affine.cluster);
    expect(moved.reroutedBy?.event.id).toBe('node_down-1');
    expect(failed.route(START + 7000).node.instanceId).toBe(affine.instanceId);
  });

  it('sends a pinned retry to its node even when that node is known to be down', () => {
    const { payments, route } = world([
      { type: 'node_down', service: 'payments', node: 0, startOffsetMillis: 0, durationMillis: 60_000 },
    ]);
    expect(route(START + 10_000, { pinned: payments.nodes[0]! }).node).toBe(payments.nodes[0]);
  });

  it('spreads a random balancer over the healthy nodes of the cluster', () => {
    const { caller, route } = world([], { policy: 'random' });
    const nodes = new Set(Array.from({ length: 200 }, (_, i) => route(START + i).node));
    expect(nodes.size).toBe(3);
    expect([...nodes].every((n) => n.cluster === caller.cluster)).toBe(true);
  });
});
