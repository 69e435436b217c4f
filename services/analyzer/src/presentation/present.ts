import type { Attempt } from '@keyscope/attempts';
import {
  type Finding,
  nodesTotalOf,
  nodesTotalOfIncident,
  type RoutingEvent,
  type ScopeReportRow,
  type Suspicion,
  storesTotalOf,
  storesTotalOfIncident,
} from '@keyscope/detector';
import type { FindingExcerpt, StoredIncident, StoredRoutingEvent } from '@keyscope/store';

/**
 * Internal records → the API's JSON, as docs/design.md's "Contracts" fixes it: times as RFC 3339
 * strings, names stable for scripts. Internal types keep Unix milliseconds.
 */
export function isoTime(unixMillis: number): string {
  return new Date(unixMillis).toISOString();
}

export function presentAttempt(attempt: Attempt) {
  const { startUnixMillis, endUnixMillis, placement, ...rest } = attempt;
  return {
    ...rest,
    service: placement.service,
    node: placement.node,
    cluster: placement.cluster,
    region: placement.region,
    zone: placement.zone,
    start: isoTime(startUnixMillis),
    end: isoTime(endUnixMillis),
    durationMillis: endUnixMillis - startUnixMillis,
  };
}

export function presentRoutingEvent(event: RoutingEvent | null) {
  if (event === null) return null;
  const { startUnixMillis, endUnixMillis, ...rest } = event;
  return { ...rest, start: isoTime(startUnixMillis), end: isoTime(endUnixMillis) };
}

/** An item of `/api/v1/routing-events`: the event and the incidents grouped under it. */
export function presentStoredRoutingEvent(stored: StoredRoutingEvent) {
  const { incidentIds, ...event } = stored;
  return { ...presentRoutingEvent(event)!, incidentIds };
}

export function presentFinding(finding: Finding) {
  return {
    id: finding.id,
    key: finding.key,
    class: finding.class,
    cause: finding.cause,
    severity: finding.severity,
    severityReason: finding.severityReason ?? null,
    service: finding.service,
    operation: finding.operation,
    tenant: finding.tenant,
    tenants: finding.tenants,
    stores: finding.stores,
    nodes: finding.nodes,
    // Findings stored before the totals existed list every store and node.
    storesTotal: storesTotalOf(finding),
    nodesTotal: nodesTotalOf(finding),
    executions: finding.executions,
    retriedBy: finding.retriedBy,
    // Findings stored before the timing fields existed present them as unknown.
    gapMillis: finding.gapMillis,
    idleMillis: finding.idleMillis ?? null,
    callerWaitMillis: finding.callerWaitMillis ?? null,
    method: finding.method ?? '',
    retryAfter: finding.retryAfter ?? 'unknown',
    firstExecutionMillis: finding.firstExecutionMillis ?? null,
    firstExecutionClipped: finding.firstExecutionClipped ?? false,
    firstExecutionLost: finding.firstExecutionLost ?? false,
    outlivedCallerWait: finding.outlivedCallerWait ?? null,
    routing: {
      affinityBroken: finding.routing.affinityBroken,
      event: presentRoutingEvent(finding.routing.event),
    },
    incidentId: finding.incidentId,
    firstSeen: isoTime(finding.firstSeenUnixMillis),
    lastSeen: isoTime(finding.lastSeenUnixMillis),
    attempts: finding.attempts.map(presentAttempt),
    attemptsTotal: finding.attempts.length,
    // Findings stored before the field existed name no evidence of suspicion.
    suspicion: presentSuspicion(finding.suspicion ?? null),
    // Findings stored before the field existed were judged on every attempt.
    evidenceCapped: finding.evidenceCapped === true,
  };
}

/** A finding whose `attempts` are the first `attempts.length` of `attemptsTotal` (an incident's detail). */
export function presentFindingExcerpt(excerpt: FindingExcerpt) {
  return { ...presentFinding(excerpt.finding), attemptsTotal: excerpt.attemptsTotal };
}

function presentSuspicion(suspicion: Suspicion | null) {
  if (suspicion === null) return null;
  return {
    strength: suspicion.strength,
    evidence: suspicion.evidence.map(({ atUnixMillis, ...rest }) => ({ ...rest, at: isoTime(atUnixMillis) })),
  };
}

export function presentIncident(incident: StoredIncident) {
  return {
    id: incident.id,
    title: incident.title,
    service: incident.service,
    operation: incident.operation,
    class: incident.class,
    severity: incident.severity,
    severityReason: incident.severityReason ?? null,
    status: incident.status,
    acknowledged: incident.acknowledged,
    acknowledgedAt:
      incident.acknowledgedUnixMillis === null ? null : isoTime(incident.acknowledgedUnixMillis),
    acknowledgedBy: incident.acknowledgedBy,
    resolvedBy: incident.resolvedBy,
    keys: incident.keys,
    stores: incident.stores,
    nodes: incident.nodes,
    // Incidents stored before the totals existed list every store and node.
    storesTotal: storesTotalOfIncident(incident),
    nodesTotal: nodesTotalOfIncident(incident),
    routingEvent: presentRoutingEvent(incident.routingEvent),
    openedAt: isoTime(incident.openedUnixMillis),
    lastFindingAt: isoTime(incident.lastFindingUnixMillis),
    resolvedAt: incident.resolvedUnixMillis === null ? null : isoTime(incident.resolvedUnixMillis),
    advice: incident.advice,
    // Incidents stored before the ids were recorded have none.
    adviceSentences: incident.adviceSentences ?? [],
  };
}

export function presentScopeRow(row: ScopeReportRow) {
  return row;
}
