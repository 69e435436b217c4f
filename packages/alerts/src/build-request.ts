import type { AlertEvent } from './alert-event.ts';
import { alertmanagerRequest, postableAlert } from './alertmanager-payload.ts';
import type { SinkConfig } from './alerts-config.ts';
import { pagerDutyRequest } from './pagerduty-payload.ts';
import type { PayloadContext, SinkRequest } from './sink-request.ts';
import { slackRequest } from './slack-payload.ts';
import { webhookRequest } from './webhook-payload.ts';

/** The request that delivers one outbox event to one sink. */
export function buildRequest(sink: SinkConfig, event: AlertEvent, context: PayloadContext): SinkRequest {
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
      return webhookRequest(sink, event.action, event.incident, context, event.page);
  }
}
