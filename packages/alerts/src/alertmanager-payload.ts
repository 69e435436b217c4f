import type { FindingClass, Incident } from '@keyscope/detector';
import { incidentUrl } from './alert-event.ts';
import type { AlertmanagerSinkConfig } from './alerts-config.ts';
import { JSON_HEADERS, type PayloadContext, rfc3339, type SinkRequest } from './sink-request.ts';

/** Alertmanager API v2 `postableAlert` (api/v2/openapi.yaml). */
export interface PostableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL: string;
}

/**
 * Routing trees match on `alertname`; both duplicate classes share one name (the `class` label
 * tells them apart) because on-call handles them the same way.
 */
export const ALERT_NAMES: Readonly<Record<FindingClass, string>> = {
  cross_store_duplicate: 'KeyscopeDuplicateExecution',
  same_store_duplicate: 'KeyscopeDuplicateExecution',
  absorbed_duplicate: 'KeyscopeAbsorbedDuplicate',
  suspected_duplicate: 'KeyscopeSuspectedDuplicate',
  key_collision: 'KeyscopeKeyCollision',
  scope_violation: 'KeyscopeScopeViolation',
};

/**
 * A firing alert is sent with `endsAt` this many re-send intervals ahead, as Prometheus does: a few
 * missed re-sends do not end it, and if keyscope stops for good Alertmanager resolves it on its own
 * whatever its `resolve_timeout`.
 */
const FIRING_ENDS_AFTER_RESENDS = 4;

/**
 * The alert for one incident. The label set is what Alertmanager identifies an alert by, so it
 * holds only what never changes for an incident id (its class fixes its severity); counts and text
 * go in annotations. A resolve carries `endsAt` at the resolve time, never in the future (event
 * time can run ahead of the wall clock), so Alertmanager treats it as resolved when it arrives.
 */
export function postableAlert(
  incident: Incident,
  firing: boolean,
  sink: AlertmanagerSinkConfig,
  context: PayloadContext,
): PostableAlert {
  const now = context.nowUnixMillis;
  const startsAt = Math.min(incident.openedUnixMillis, now);
  const endsAt = firing
    ? now + FIRING_ENDS_AFTER_RESENDS * sink.resendIntervalMillis
    : Math.max(startsAt, Math.min(incident.resolvedUnixMillis ?? now, now));
  const url = incidentUrl(context.publicUrl, incident.id);
  const annotations: Record<string, string> = {
    summary: incident.title,
    description: incident.advice,
    incident_url: url,
    keys: String(incident.keys),
    stores: incident.stores.join(', '),
    nodes: incident.nodes.join(', '),
  };
  if (incident.routingEvent !== null) annotations.routing_event = incident.routingEvent.description;
  return {
    labels: {
      alertname: ALERT_NAMES[incident.class],
      severity: incident.severity,
      service: incident.service,
      operation: incident.operation,
      class: incident.class,
      incident_id: incident.id,
    },
    annotations,
    startsAt: rfc3339(startsAt),
    endsAt: rfc3339(endsAt),
    generatorURL: url,
  };
}

/** `POST /api/v2/alerts` with a list of alerts (one for a trigger or resolve, many for a re-send). */
export function alertmanagerRequest(sink: AlertmanagerSinkConfig, alerts: PostableAlert[]): SinkRequest {
  return { url: alertsEndpoint(sink.url), headers: JSON_HEADERS, body: alerts };
}

/** The sink URL is Alertmanager's base URL; a URL already naming the endpoint is taken as is. */
function alertsEndpoint(base: string): string {
  const trimmed = base.replace(/\/+$/, '');
  return trimmed.endsWith('/api/v2/alerts') ? trimmed : `${trimmed}/api/v2/alerts`;
}
