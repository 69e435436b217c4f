import type { Placement } from '@keyscope/attempts';

/**
 * A change in routing inferred from the spans themselves. Each one is explainable on its own: a
 * type, where (service and node/cluster/region), and an event-time window.
 *
 * - `node_down`: a node that had steady traffic emitted no server spans for at least
 *   `silenceMinMillis` while the rest of its service kept serving.
 * - `error_spike`: a node's server spans failed at `errorSpikeRatio` or more for at least
 *   `errorSpikeMinMillis`.
 * - `latency_spike`: a node's server spans lasted past a duration its service's other nodes
 *   rarely reach `latencySpikeRatio` times as often as theirs did (and twice as often as its own
 *   did before) for at least `latencySpikeMinMillis` (a brownout: callers timed out on it and
 *   retried elsewhere); see slow-share.ts.
 * - `cluster_failover` / `region_failover`: every node of the service in that cluster / region
 *   went down at once while the service kept serving elsewhere; replaces the node events.
 */
export type RoutingEventType =
  | 'node_down'
  | 'error_spike'
  | 'latency_spike'
  | 'cluster_failover'
  | 'region_failover';

export interface RoutingEvent {
  id: string;
  type: RoutingEventType;
  service: string;
  /** Set for node events; '' for cluster/region events. */
  node: string;
  cluster: string;
  region: string;
  startUnixMillis: number;
  /** End of the window: the first bucket the node (or region) served again, or the last observed. */
  endUnixMillis: number;
  /** False while the window is still open at the end of what has been observed. */
  ended: boolean;
  /** A sentence a human can check against their dashboards. */
  description: string;
}

/**
 * How far each type of event reaches: a node's own, or every node of its cluster or region. A new
 * type names its reach here, and attribution (evaluate-key.ts) follows it.
 */
export const EVENT_REACH: Readonly<Record<RoutingEventType, 'node' | 'cluster' | 'region'>> = {
  node_down: 'node',
  error_spike: 'node',
  latency_spike: 'node',
  cluster_failover: 'cluster',
  region_failover: 'region',
};

/** Every type of routing event, for a filter's closed list. */
export const ROUTING_EVENT_TYPES = Object.keys(EVENT_REACH) as readonly RoutingEventType[];

/** Whether `placement` (a node) is where `event` happened. */
export function eventCovers(event: RoutingEvent, placement: Placement): boolean {
  switch (EVENT_REACH[event.type]) {
    case 'node':
      return placement.node === event.node;
    case 'cluster':
      return placement.cluster === event.cluster && placement.region === event.region;
    case 'region':
      return placement.region === event.region;
  }
}

/** Orders events by start, then id: the order inference reports them in. */
export function compareEvents(a: RoutingEvent, b: RoutingEvent): number {
  return a.startUnixMillis - b.startUnixMillis || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
