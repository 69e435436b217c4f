/** One HTTP POST to a sink, as the payload builders describe it and `sendRequest` performs it. */
export interface SinkRequest {
  url: string;
  headers: Readonly<Record<string, string>>;
  /** Serialized as JSON. */
  body: unknown;
}

/** What a payload builder needs besides the incident. */
export interface PayloadContext {
  /** Base URL of keyscope's web page (see `incidentUrl`). */
  publicUrl: string;
  /** The time of delivery, not of enqueueing: a retried resolve still ends the alert "now". */
  nowUnixMillis: number;
}

export const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-type': 'application/json',
});

/** RFC 3339 in UTC, the form Alertmanager, PagerDuty and keyscope's API all read. */
export function rfc3339(unixMillis: number): string {
  return new Date(unixMillis).toISOString();
}

/** Cuts text to a field's limit, marking the cut so a reader knows there was more. */
export function truncate(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}
