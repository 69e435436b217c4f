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
  /**
   * Which time the incident is paged: 1 (absent in entries written before reopenings were paged)
   * until it resolves and then reopens — it gained a finding later than its resolution, or keys
   * after a manual resolve — which pages it again as 2, and so on.
   */
  page?: number;
}

/**
 * One outbox entry per (sink, dedup key): one trigger and one resolve per incident, sink and page.
 * The first page's keys carry no number (`inc_…:trigger`), later ones do (`inc_…:trigger:2`).
 */
export function dedupKeyOf(incidentId: string, action: AlertAction, page = 1): string {
  return page === 1 ? `${incidentId}:${action}` : `${incidentId}:${action}:${page}`;
}

/** The page a dedup key of the incident and action names; 0 when it names another incident or action. */
export function pageOfDedupKey(dedupKey: string, incidentId: string, action: AlertAction): number {
  const first = dedupKeyOf(incidentId, action);
  if (dedupKey === first) return 1;
  if (!dedupKey.startsWith(`${first}:`)) return 0;
  const page = Number(dedupKey.slice(first.length + 1));
  return Number.isSafeInteger(page) && page >= 2 ? page : 0;
}

/** The incident's page in keyscope's web UI; every sink's message links to it. */
export function incidentUrl(publicUrl: string, incidentId: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/incidents/${encodeURIComponent(incidentId)}`;
}

/** Reads an outbox payload back; undefined when it is not an event this package wrote. */
export function readAlertEvent(payload: unknown): AlertEvent | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const { action, incident, page } = payload as Partial<AlertEvent>;
  if (action !== 'trigger' && action !== 'resolve') return undefined;
  if (typeof incident !== 'object' || incident === null || typeof incident.id !== 'string') return undefined;
  if (page !== undefined && !(Number.isSafeInteger(page) && page >= 1)) return undefined;
  return page === undefined ? { action, incident } : { action, incident, page };
}
