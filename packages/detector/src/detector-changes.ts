import type { NodeActivity } from '@keyscope/attempts';
import type { Incident } from './incidents/incidents.ts';
import type { RoutingEvent } from './routing/routing-event.ts';
import type { Finding } from './rules/finding.ts';

/**
 * What one call changed. Findings, incidents and routing events are upserts keyed by their
 * deterministic ids; retractions remove what later evidence disproved (a scope violation that
 * became a duplicate, an incident whose findings moved to a routing event's incident, a node_down
 * that late spans of the node showed never happened).
 */
export interface DetectorChanges {
  findings: Finding[];
  retractedFindingIds: string[];
  incidents: Incident[];
  retractedIncidentIds: string[];
  /**
   * Routing events inferred or revised since the last `tick` (new, or with a new window), and
   * those no longer inferred because late activity disproved them. An event forgotten past the
   * retry horizon is not retracted: it happened, and a store keeps it for its own retention. Only
   * `tick` and `flush` report them; absent means none.
   */
  routingEvents?: RoutingEvent[];
  retractedRoutingEventIds?: string[];
  /**
   * The node activity `ingest` counted: its batches' activity, less that of the batches delivered
   * again, summed by node and second. What a store keeps for `restore`; only `ingest` reports it.
   */
  activity?: NodeActivity[];
}

/**
 * The changes of one detector call as they accumulate: the latest version of each finding and
 * incident by id, so one changed twice in a call is reported once. `result` gives the call's
 * `DetectorChanges`.
 */
export class Changes {
  readonly findings = new Map<string, Finding>();
  readonly retractedFindings = new Set<string>();
  readonly incidents = new Map<string, Incident>();
  readonly retractedIncidents = new Set<string>();
  readonly routingEvents: RoutingEvent[] = [];
  readonly retractedRoutingEvents: string[] = [];

  result(): DetectorChanges {
    for (const id of this.retractedIncidents) this.incidents.delete(id);
    const changes: DetectorChanges = {
      findings: [...this.findings.values()],
      retractedFindingIds: [...this.retractedFindings],
      incidents: [...this.incidents.values()].map((incident) => ({ ...incident })),
      retractedIncidentIds: [...this.retractedIncidents],
    };
    if (this.routingEvents.length > 0) changes.routingEvents = this.routingEvents;
    if (this.retractedRoutingEvents.length > 0)
      changes.retractedRoutingEventIds = this.retractedRoutingEvents;
    return changes;
  }
}
