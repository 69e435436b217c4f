import type { Placement } from '@keyscope/attempts';
import { stableId } from '../ids.ts';
import type { RoutingEvent } from './routing-event.ts';
import { type SlowdownFigures, slowdownDescription } from './slow-share.ts';

/*
 * Every routing event is built here, from what its finder found: its id follows from its type,
 * where it happened and its start, so an event found again (incrementally, or reading the whole
 * window again) is the same event, and one that moved is a new one.
 */

/** A node that emitted no server spans from `startUnixMillis` to `endUnixMillis`; `ended` false if still silent. */
export function nodeDownEvent(
  placement: Placement,
  startUnixMillis: number,
  endUnixMillis: number,
  ended: boolean,
): RoutingEvent {
  const { service, node } = placement;
  return {
    id: stableId('re', ['node_down', service, node, startUnixMillis]),
    type: 'node_down',
    service,
    node,
    cluster: placement.cluster,
    region: placement.region,
    startUnixMillis,
    endUnixMillis,
    ended,
    description: `${service} node ${node} emitted no server spans for ${formatSeconds(
      endUnixMillis - startUnixMillis,
    )}${ended ? '' : ' (still silent)'} while other nodes of ${service} kept serving`,
  };
}

/** A node that failed `errorRatio` or more of its server spans over whole buckets. */
export function errorSpikeEvent(
  placement: Placement,
  startUnixMillis: number,
  endUnixMillis: number,
  errorRatio: number,
): RoutingEvent {
  return spikeEvent(
    'error_spike',
    placement,
    startUnixMillis,
    endUnixMillis,
    `${placement.service} node ${placement.node} failed ${Math.round(
      errorRatio * 100,
    )}% or more of its server spans for ${formatSeconds(endUnixMillis - startUnixMillis)}`,
  );
}

/** A node slower than its peers and its own past over whole buckets: a brownout (see slow-share.ts). */
export function latencySpikeEvent(placement: Placement, figures: SlowdownFigures): RoutingEvent {
  return spikeEvent(
    'latency_spike',
    placement,
    figures.startUnixMillis,
    figures.endUnixMillis,
    slowdownDescription(placement.service, placement.node, figures),
  );
}

/**
 * All `nodes` nodes of `service` in cluster or region `name` down together: one event over their
 * down events, `together` (one per node, sorted by `compareEvents`), from the earliest start to the
 * latest end, ended once every one has.
 */
export function failoverEvent(
  level: 'region' | 'cluster',
  service: string,
  name: string,
  nodes: number,
  together: readonly RoutingEvent[],
): RoutingEvent {
  let startUnixMillis = Number.POSITIVE_INFINITY;
  let endUnixMillis = Number.NEGATIVE_INFINITY;
  for (const event of together) {
    if (event.startUnixMillis < startUnixMillis) startUnixMillis = event.startUnixMillis;
    if (event.endUnixMillis > endUnixMillis) endUnixMillis = event.endUnixMillis;
  }
  const ended = together.every((e) => e.ended);
  const type = level === 'region' ? 'region_failover' : 'cluster_failover';
  const first = together[0]!;
  return {
    id: stableId('re', [type, service, name, startUnixMillis]),
    type,
    service,
    node: '',
    cluster: level === 'cluster' ? name : first.cluster,
    region: first.region,
    startUnixMillis,
    endUnixMillis,
    ended,
    description: `all ${nodes} nodes of ${service} in ${level} ${name} stopped serving for ${formatSeconds(
      endUnixMillis - startUnixMillis,
    )}${ended ? '' : ' (still down)'} while ${service} kept serving elsewhere`,
  };
}

/** A spike on one node over whole buckets, closed: its id follows from type, service, node and start. */
function spikeEvent(
  type: 'error_spike' | 'latency_spike',
  placement: Placement,
  startUnixMillis: number,
  endUnixMillis: number,
  description: string,
): RoutingEvent {
  return {
    id: stableId('re', [type, placement.service, placement.node, startUnixMillis]),
    type,
    service: placement.service,
    node: placement.node,
    cluster: placement.cluster,
    region: placement.region,
    startUnixMillis,
    endUnixMillis,
    ended: true,
    description,
  };
}

function formatSeconds(millis: number): string {
  return `${Math.round(millis / 1000)} s`;
}
