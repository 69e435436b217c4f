import type { Incident } from '@keyscope/detector';
import { type AlertAction, dedupKeyOf, incidentUrl } from './alert-event.ts';
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
 * Delivery is at least once (a timeout after the receiver acted is retried), so every request
 * carries an `idempotency-key` header, stable across retries, for the receiver to deduplicate by
 * (the outbox's dedup key: a reopened incident's new page has a key of its own).
 */
export function webhookRequest(
  sink: WebhookSinkConfig,
  action: AlertAction,
  incident: Incident,
  context: PayloadContext,
  page = 1,
): SinkRequest {
  const body: WebhookBody = {
    event: action === 'trigger' ? 'incident.opened' : 'incident.resolved',
    incident,
    url: incidentUrl(context.publicUrl, incident.id),
  };
  return {
    url: sink.url,
    headers: { ...sink.headers, ...JSON_HEADERS, 'idempotency-key': dedupKeyOf(incident.id, action, page) },
    body,
  };
}
