import { type AlertEvent, dedupKeyOf } from './alert-event.ts';
import { alertmanagerRequest, postableAlert } from './alertmanager-payload.ts';
import type { SinkConfig } from './alerts-config.ts';
import { pagerDutyRequest } from './pagerduty-payload.ts';
import type { PayloadContext, SinkRequest } from './sink-request.ts';
import { slackRequest } from './slack-payload.ts';
import { webhookRequest } from './webhook-payload.ts';

/**
 * The request that delivers one outbox event to one sink. Delivery is at least once (a request
 * that timed out after the sink acted, or that a restart cut short, is sent again), so every
 * request carries an `idempotency-key` header for the receiver to deduplicate by: the outbox
 * entry's dedup key, the same on every redelivery of one trigger or resolve of one page
 * (`inc_…:trigger`, `inc_…:resolve`, `inc_…:trigger:2`…).
 */
export function buildRequest(sink: SinkConfig, event: AlertEvent, context: PayloadContext): SinkRequest {
  const request = sinkRequest(sink, event, context);
  const idempotencyKey = dedupKeyOf(event.incident.id, event.action, event.page);
  return { ...request, headers: { ...request.headers, 'idempotency-key': idempotencyKey } };
}

function sinkRequest(sink: SinkConfig, event: AlertEvent, context: PayloadContext): SinkRequest {
  switch (sink.type) {
    case 'alertmanager':
      return alertmanagerRequest(sink, [
        postableAlert(event.incident, event.action === 'trigger', sink, context),
      ]);
    case 'pagerduty':
      return pagerDutyRequest(sink, event.action, event.incident, context);
    case 'slack':
      return slackRequest(sink, event.action, event.incident, context);
    case 'webhook':
      return webhookRequest(sink, event.action, event.incident, context);
  }
}
