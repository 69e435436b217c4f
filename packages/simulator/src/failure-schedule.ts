import type { Resource, Span } from '@keyscope/otlp';
import type { Prng } from './prng.ts';
import type { FailureSpec, Scenario } from './scenario.ts';
import type { SimNode, Topology } from './topology.ts';
import type { TruthRoutingEvent } from './truth.ts';

/** A failure placed on concrete nodes and absolute times. */
export interface ScheduledFailure {
  event: TruthRoutingEvent;
  startUnixMillis: number;
  endUnixMillis: number;
  /** When load balancers stop sending to the affected nodes. */
  detectedUnixMillis: number;
  /** `error_spike`: of store lookups; `execution_failure`: of admitted requests. */
  errorRate: number;
  /** `execution_failure` only. */
  phase?: 'before_effect' | 'after_effect';
  /** `brownout` only: how much later the node answers. */
  slowdownMillis?: number;
  /**
   * `node_down` of a killed process only: when its SDK last exported spans, at or before the
   * kill; what ended after it, or was still open at the kill, is lost.
   */
  lastExportUnixMillis?: number;
}

/**
 * The run's failures, resolved up front: which node or region fails, from when to when. Known in
 * advance so that every flow is simulated independently of the others (and lazily).
 */
export class FailureSchedule {
  readonly routingEvents: TruthRoutingEvent[] = [];
  private readonly outages = new Map<SimNode, NodeFailures>();
  private readonly spikes = new Map<SimNode, NodeFailures>();
  private readonly executionFailures = new Map<SimNode, NodeFailures>();
  private readonly brownouts = new Map<SimNode, NodeFailures>();
  /** Kills of each killed node, by the resource its spans carry. */
  private readonly kills = new Map<Resource, ScheduledFailure[]>();

  constructor(scenario: Scenario, topology: Topology, rng: Prng) {
    scenario.failures.forEach((spec, i) => {
      const service = topology.services.get(spec.service)!;
      const startUnixMillis = scenario.startUnixMillis + spec.startOffsetMillis;
      const endUnixMillis = startUnixMillis + spec.durationMillis;
      const detectionMillis = service.spec?.routing.detectionMillis ?? 0;
      const id = `${spec.type}-${i + 1}`;
      const failure = (event: TruthRoutingEvent, errorRate = 0): ScheduledFailure => ({
        event,
        startUnixMillis,
        endUnixMillis,
        detectedUnixMillis: startUnixMillis + detectionMillis,
        errorRate,
      });
      if (spec.type === 'region_failover') {
        const scheduled = failure({
          id,
          type: spec.type,
          service: spec.service,
          region: spec.region,
          startUnixMillis,
          endUnixMillis,
        });
        this.routingEvents.push(scheduled.event);
        for (const node of service.nodes) if (node.region === spec.region) add(this.outages, node, scheduled);
        return;
      }
      const node = pickNode(spec, service.nodes, rng);
      const scheduled = failure(
        {
          id,
          type: spec.type,
          service: spec.service,
          node: node.instanceId,
          cluster: node.cluster,
          region: node.region,
          startUnixMillis,
          endUnixMillis,
        },
        spec.type === 'error_spike'
          ? spec.errorRate
          : spec.type === 'execution_failure'
            ? spec.failureRate
            : 0,
      );
      if (spec.type === 'execution_failure') scheduled.phase = spec.phase;
      if (spec.type === 'brownout') scheduled.slowdownMillis = spec.slowdownMillis;
      if (spec.type === 'node_down' && spec.kill) {
        // Drawn only for kills, so that runs without one keep their failures.
        scheduled.lastExportUnixMillis = startUnixMillis - rng.between(0, spec.kill.exportIntervalMillis);
        scheduled.event.lastExportUnixMillis = scheduled.lastExportUnixMillis;
        const kills = this.kills.get(node.resource) ?? [];
        kills.push(scheduled);
        this.kills.set(node.resource, kills);
      }
      this.routingEvents.push(scheduled.event);
      const byType = {
        error_spike: this.spikes,
        execution_failure: this.executionFailures,
        node_down: this.outages,
        brownout: this.brownouts,
      };
      add(byType[spec.type], node, scheduled);
    });
  }

  /** The outage that makes `node` unreachable (and silent) at `t`, if any. */
  outageAt(node: SimNode, t: number): ScheduledFailure | undefined {
    return this.outages.get(node)?.at(t);
  }

  /** The outage at `t` that load balancers already know about. */
  knownOutageAt(node: SimNode, t: number): ScheduledFailure | undefined {
    const outage = this.outageAt(node, t);
    return outage && t >= outage.detectedUnixMillis ? outage : undefined;
  }

  /** An outage that began while a request was in flight on `node`, in (fromMillis, toMillis]. */
  outageBeginningIn(node: SimNode, fromMillis: number, toMillis: number): ScheduledFailure | undefined {
    return this.outages.get(node)?.beginningIn(fromMillis, toMillis);
  }

  /**
   * Whether `span` reached the pipeline: false when its node was killed after it began and before
   * exporting it (it ended after the last export before the kill, or was still open), or it would
   * have begun while the process was dead (work that a request in flight at the kill had still
   * planned).
   */
  exported(span: Span): boolean {
    const kills = this.kills.get(span.resource);
    if (kills === undefined) return true;
    const start = span.startTimeUnixMillis;
    return !kills.some((kill) =>
      start < kill.startUnixMillis
        ? span.endTimeUnixMillis > kill.lastExportUnixMillis!
        : start < kill.endUnixMillis,
    );
  }

  spikeAt(node: SimNode, t: number): ScheduledFailure | undefined {
    return this.spikes.get(node)?.at(t);
  }

  /** The `brownout` of `node` at `t`, if any. */
  brownoutAt(node: SimNode, t: number): ScheduledFailure | undefined {
    return this.brownouts.get(node)?.at(t);
  }

  /** The `execution_failure` of `node` at `t`, if any. */
  executionFailureAt(node: SimNode, t: number): ScheduledFailure | undefined {
    return this.executionFailures.get(node)?.at(t);
  }
}

function pickNode(
  spec: Exclude<FailureSpec, { type: 'region_failover' }>,
  nodes: SimNode[],
  rng: Prng,
): SimNode {
  // Always draw, so that setting `node` on one failure does not move the others.
  const drawn = rng.pick(nodes);
  if (spec.node === undefined) return drawn;
  const node = nodes[spec.node];
  if (!node)
    throw new RangeError(`failure on ${spec.service}: node must be < ${nodes.length}, received ${spec.node}`);
  return node;
}

function add(map: Map<SimNode, NodeFailures>, node: SimNode, failure: ScheduledFailure): void {
  let failures = map.get(node);
  if (!failures) map.set(node, (failures = new NodeFailures()));
  failures.add(failure);
}

/**
 * One node's failures sorted by start, searched by bisection: a long benchmark schedules a failure
 * every few seconds of simulated time and every send asks about its target node.
 */
class NodeFailures {
  private readonly starts: number[] = [];
  private readonly failures: ScheduledFailure[] = [];
  private longestMillis = 0;

  add(failure: ScheduledFailure): void {
    const i = this.firstStartAfter(failure.startUnixMillis);
    this.starts.splice(i, 0, failure.startUnixMillis);
    this.failures.splice(i, 0, failure);
    this.longestMillis = Math.max(this.longestMillis, failure.endUnixMillis - failure.startUnixMillis);
  }

  /** The failure in effect at `t` (the latest-starting one if several overlap). */
  at(t: number): ScheduledFailure | undefined {
    for (let i = this.firstStartAfter(t) - 1; i >= 0; i--) {
      const failure = this.failures[i]!;
      if (failure.startUnixMillis < t - this.longestMillis) return undefined;
      if (t < failure.endUnixMillis) return failure;
    }
    return undefined;
  }

  /** The first failure starting in (fromMillis, toMillis]. */
  beginningIn(fromMillis: number, toMillis: number): ScheduledFailure | undefined {
    const failure = this.failures[this.firstStartAfter(fromMillis)];
    return failure && failure.startUnixMillis <= toMillis ? failure : undefined;
  }

  private firstStartAfter(t: number): number {
    let lo = 0;
    let hi = this.starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid]! <= t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
