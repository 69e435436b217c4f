import type { Incident, RoutingEvent } from '@keyscope/detector';
import type { StoredIncident } from '@keyscope/store';
import {
  presentFinding,
  presentIncident,
  presentScopeRow,
  presentStoredRoutingEvent,
} from '../presentation/present.ts';
import type { AnalysisResult } from './analysis.ts';

/**
 * `--format json`: one object with the API's shapes (docs/design.md, "Contracts"), so a script written
 * against `GET /api/v1/findings`, `/incidents`, `/scopes` and `/routing-events` reads analyze's
 * output unchanged.
 */
export function analysisJson(result: AnalysisResult) {
  return {
    findings: result.findings.map(presentFinding),
    incidents: result.incidents.map((incident) => presentIncident(unacknowledged(incident))),
    scopes: result.scopes.map(presentScopeRow),
    routingEvents: routingEventsNewestFirst(result.routingEvents).map((event) =>
      presentStoredRoutingEvent({ ...event, incidentIds: citing(result.incidents, event) }),
    ),
  };
}

/** Nobody acknowledged or resolved anything by hand in an offline run. */
function unacknowledged(incident: Incident): StoredIncident {
  return {
    ...incident,
    acknowledged: false,
    acknowledgedUnixMillis: null,
    acknowledgedBy: null,
    resolvedBy: null,
  };
}

/** As the API lists them: the latest to start first (then by id, for two runs to print the same). */
function routingEventsNewestFirst(events: readonly RoutingEvent[]): RoutingEvent[] {
  return [...events].sort(
    (a, b) => b.startUnixMillis - a.startUnixMillis || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
}

/** The incidents grouped under the event, in order of opening (the result's order). */
function citing(incidents: readonly Incident[], event: RoutingEvent): string[] {
  return incidents
    .filter((incident) => incident.routingEvent?.id === event.id)
    .map((incident) => incident.id);
}
