import type { Incident } from '@keyscope/detector';
import { type AlertAction, incidentUrl } from './alert-event.ts';
import type { WebhookSinkConfig } from './alerts-config.ts';
import { JSON_HEADERS, type PayloadContext, type SinkRequest } from './sink-request.ts';

export type WebhookEventName = 'incident.opened' | 'incident.resolved';

/** The generic webhook's body: the incident as the API serves it, plus its page. */
export interface WebhookBody {
  event: WebhookEventName;
  incident: Incident;
  url: string;
}

/**
 * The configured headers and the body; `buildRequest` adds the `idempotency-key` every delivery
 * carries.
 */
export function webhookRequest(
  sink: WebhookSinkConfig,
  action: AlertAction,
  incident: Incident,
  context: PayloadContext,
): SinkRequest {
  const body: WebhookBody = {
    event: action === 'trigger' ? 'incident.opened' : 'incident.resolved',
    incident,
    url: incidentUrl(context.publicUrl, incident.id),
  };
  return {
    url: sink.url,
    headers: { ...sink.headers, ...JSON_HEADERS },
    body,
  };
}
