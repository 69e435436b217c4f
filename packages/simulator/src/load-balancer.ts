import type { FailureSchedule, ScheduledFailure } from './failure-schedule.ts';
import type { Prng } from './prng.ts';
import type { RoutingSpec } from './scenario.ts';
import { clusterKey, type SimNode, type SimService, type Topology } from './topology.ts';

export interface RouteRequest {
  service: SimService;
  routing: RoutingSpec;
  /** The sending node: its cluster is the preferred one (locality), its region the home region. */
  from: SimNode;
  atUnixMillis: number;
  /** Stable per customer session: what session affinity hashes. */
  session: number;
  /** Nodes to avoid if any other is healthy (a proxy's retry skips hosts it already tried). */
  avoid?: ReadonlySet<SimNode>;
  /** Enforced target (pinned retries): used even when it is down. */
  pinned?: SimNode;
}

export interface Route {
  node: SimNode;
  /** Set when the preferred node was known to be down and traffic moved because of this failure. */
  reroutedBy: ScheduledFailure | undefined;
}

/**
 * Picks the node a send reaches. The load balancer sees failures only after health checks detect
 * them; until then it keeps sending to the failed node, and those sends time out.
 */
export function routeRequest(
  request: RouteRequest,
  topology: Topology,
  schedule: FailureSchedule,
  rng: Prng,
): Route {
  if (request.pinned) return { node: request.pinned, reroutedBy: undefined };
  const { service, routing, from, atUnixMillis: t } = request;
  const home = service.clusterNodes.get(clusterKey(from.region, from.cluster))!;
  const affine = home[request.session % home.length]!;
  const affineOutage = schedule.knownOutageAt(affine, t);
  const picked = pickIn(home, request, affine, schedule, rng);
  if (picked) {
    const moved = routing.policy === 'session' && picked !== affine;
    return { node: picked, reroutedBy: moved ? affineOutage : undefined };
  }
  // The whole home cluster is known to be down: fail over as far as the routing allows.
  const homeOutage =
    affineOutage ??
    home.map((node) => schedule.knownOutageAt(node, t)).find((outage) => outage !== undefined);
  for (const group of failoverGroups(service, routing, from, topology)) {
    const node = pickIn(group, request, undefined, schedule, rng);
    if (node) return { node, reroutedBy: homeOutage };
  }
  // Nothing known to be healthy within reach: the balancer keeps its choice and the send fails.
  return { node: affine, reroutedBy: undefined };
}

/** A healthy node of `group` by the routing policy, or undefined when none is known healthy. */
function pickIn(
  group: SimNode[],
  request: RouteRequest,
  affine: SimNode | undefined,
  schedule: FailureSchedule,
  rng: Prng,
): SimNode | undefined {
  const t = request.atUnixMillis;
  const avoid = request.avoid;
  if (
    request.routing.policy === 'session' &&
    affine &&
    !avoid?.has(affine) &&
    !schedule.knownOutageAt(affine, t)
  ) {
    return affine;
  }
  let healthy = group.filter((node) => !schedule.knownOutageAt(node, t));
  if (healthy.length === 0) return undefined;
  if (avoid && avoid.size > 0) {
    const unavoided = healthy.filter((node) => !avoid.has(node));
    if (unavoided.length > 0) healthy = unavoided;
  }
  return request.routing.policy === 'random' ? rng.pick(healthy) : healthy[request.session % healthy.length]!;
}

function* failoverGroups(
  service: SimService,
  routing: RoutingSpec,
  from: SimNode,
  topology: Topology,
): Generator<SimNode[]> {
  if (routing.failover === 'cluster') return;
  for (const cluster of topology.clustersByRegion.get(from.region)!) {
    if (cluster !== from.cluster) yield service.clusterNodes.get(clusterKey(from.region, cluster))!;
  }
  if (routing.failover === 'region') return;
  const regions = topology.regions;
  const homeIndex = regions.indexOf(from.region);
  for (let i = 1; i < regions.length; i++) {
    const region = regions[(homeIndex + i) % regions.length]!;
    for (const cluster of topology.clustersByRegion.get(region)!) {
      yield service.clusterNodes.get(clusterKey(region, cluster))!;
    }
  }
}
