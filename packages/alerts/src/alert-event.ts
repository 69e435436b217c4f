import type { Incident } from '@keyscope/detector';

export type AlertAction = 'trigger' | 'resolve';

/**
 * What the outbox holds for one delivery: the action and the incident as it was when the action
 * was enqueued. The sink's request is built from it at delivery time, so the outbox holds no sink
 * secrets (routing keys, webhook headers) and a changed URL applies to deliveries still pending.
 */
export interface AlertEvent {
  action: AlertAction;
  incident: Incident;
}

/** One outbox entry per (sink, dedup key): one trigger and one resolve per incident and sink. */
export function dedupKeyOf(incidentId: string, action: AlertAction): string {
  return `${incidentId}:${action}`;
}

/** The incident's page in keyscope's web UI; every sink's message links to it. */
export function incidentUrl(publicUrl: string, incidentId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/incidents/${encodeURIComponent(incidentId)}`;
}

/** Reads an outbox payload back; undefined when it is not an event this package wrote. */
export function readAlertEvent(payload: unknown): AlertEvent | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const { action, incident } = payload as Partial<AlertEvent>;
  if (action !== 'trigger' && action !== 'resolve') return undefined;
  if (typeof incident !== 'object' || incident === null || typeof incident.id !== 'string') return undefined;
  return { action, incident };
}
