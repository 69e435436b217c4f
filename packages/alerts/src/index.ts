export { type AlertAction, type AlertEvent, dedupKeyOf, incidentUrl } from './alert-event.ts';
export type { AlertedIncidents, AlertOutbox, OutboxEntry } from './alert-outbox.ts';
export {
  type Alerter,
  type AlerterOptions,
  createAlerter,
  type DeliveryPassResult,
} from './alerter.ts';
export {
  ALERT_NAMES,
  alertmanagerRequest,
  type PostableAlert,
  postableAlert,
} from './alertmanager-payload.ts';
export {
  type AlertmanagerSinkConfig,
  type AlertsConfig,
  defaultAlertsConfig,
  PAGERDUTY_EVENTS_URL,
  type PagerDutySinkConfig,
  parseAlertsConfig,
  SINK_TYPES,
  type SinkConfig,
  type SinkType,
  type SlackSinkConfig,
  type WebhookSinkConfig,
} from './alerts-config.ts';
export { buildRequest } from './build-request.ts';
export {
  DELIVERY_OUTCOMES,
  type DeliveryCountersSnapshot,
  type DeliveryOutcome,
} from './delivery-counters.ts';
export {
  ALERTS_CONFIG_DUPLICATE_NAME,
  ALERTS_CONFIG_INVALID_VALUE,
  ALERTS_CONFIG_MISSING,
  ALERTS_CONFIG_UNKNOWN_KEY,
  ALERTS_CONFIG_WRONG_TYPE,
  ALERTS_ERRORS,
} from './errors.ts';
export { pagerDutyRequest } from './pagerduty-payload.ts';
export type { PayloadContext, SinkRequest } from './sink-request.ts';
export { slackRequest } from './slack-payload.ts';
export { type WebhookBody, type WebhookEventName, webhookRequest } from './webhook-payload.ts';
