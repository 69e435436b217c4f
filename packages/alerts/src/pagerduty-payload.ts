import type { Incident, Severity } from '@keyscope/detector';
import { type AlertAction, incidentUrl } from './alert-event.ts';
import type { PagerDutySinkConfig } from './alerts-config.ts';
import { JSON_HEADERS, type PayloadContext, rfc3339, type SinkRequest, truncate } from './sink-request.ts';

/** PagerDuty's severities are critical/error/warning/info; keyscope's `high` is its `error`. */
const PAGERDUTY_SEVERITY: Readonly<Record<Severity, 'critical' | 'error' | 'warning'>> = {
  critical: 'critical',
  high: 'error',
  warning: 'warning',
};

/** Events API v2 limits (PagerDuty developer docs, "Send an Alert Event"). */
const SUMMARY_MAX_CHARS = 1024;

/**
 * An Events API v2 `enqueue` body. `dedup_key` is the incident id, so PagerDuty folds a repeated
 * trigger into the open alert and the resolve closes exactly that alert. A resolve carries only
 * the routing key, action and dedup key, which is all PagerDuty reads from one.
 */
export function pagerDutyRequest(
  sink: PagerDutySinkConfig,
  action: AlertAction,
  incident: Incident,
  context: PayloadContext,
): SinkRequest {
  const base = { routing_key: sink.routingKey, event_action: action, dedup_key: incident.id };
  if (action === 'resolve') return { url: sink.url, headers: JSON_HEADERS, body: base };
  const url = incidentUrl(context.publicUrl, incident.id);
  return {
    url: sink.url,
    headers: JSON_HEADERS,
    body: {
      ...base,
      payload: {
        summary: truncate(incident.title, SUMMARY_MAX_CHARS),
        source: incident.service,
        severity: PAGERDUTY_SEVERITY[incident.severity],
        timestamp: rfc3339(incident.openedUnixMillis),
        component: incident.operation,
        group: incident.service,
        class: incident.class,
        custom_details: {
          incident_id: incident.id,
          keyscope_severity: incident.severity,
          advice: incident.advice,
          keys: incident.keys,
          stores: incident.stores,
          nodes: incident.nodes,
          routing_event: incident.routingEvent?.description ?? null,
          opened: rfc3339(incident.openedUnixMillis),
          last_finding: rfc3339(incident.lastFindingUnixMillis),
        },
      },
      client: 'keyscope',
      client_url: context.publicUrl,
      links: [{ href: url, text: 'Incident in keyscope' }],
    },
  };
}
