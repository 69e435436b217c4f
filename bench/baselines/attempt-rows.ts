import { decodeRequestWithProtobufjs, type Message } from '../protobufjs-decoder.ts';

/** One dedup decision of an idempotency-keyed mutation, flattened into a table row. */
export interface AttemptRow {
  /** The resource's `service.name`: whose dedup tier made the decision. */
  service: string;
  key: string;
  outcome: string;
  /** Null when the span names no store. */
  store: string | null;
}

/** OTLP's SPAN_KIND_CLIENT: the caller's span, which records no dedup decision. */
const SPAN_KIND_CLIENT = 3;

/**
 * What a user building the batch approach writes first: decode each request with protobufjs and
 * keep the server-side spans (any kind but CLIENT: the decision is often recorded on an internal
 * child span) that carry an `idempotency.key` and an `idempotency.outcome`, with their dedup store,
 * as rows for a database. No retries, tenants, routing or clients: the rows hold what the GROUP BY
 * needs, nothing more.
 */
export function appendAttemptRows(body: Uint8Array, rows: AttemptRow[]): void {
  const request = decodeRequestWithProtobufjs(body);
  for (const resourceSpans of request.resourceSpans as Message[]) {
    let service = '';
    for (const attribute of (resourceSpans.resource?.attributes ?? []) as Message[]) {
      if (attribute.key === 'service.name') service = attribute.value?.stringValue ?? '';
    }
    for (const scopeSpans of resourceSpans.scopeSpans as Message[]) {
      for (const span of scopeSpans.spans as Message[]) {
        if (span.kind === SPAN_KIND_CLIENT) continue;
        let key: string | undefined;
        let outcome: string | undefined;
        let store: string | null = null;
        for (const attribute of span.attributes as Message[]) {
          switch (attribute.key) {
            case 'idempotency.key':
              key = attribute.value?.stringValue;
              break;
            case 'idempotency.outcome':
              outcome = attribute.value?.stringValue;
              break;
            case 'idempotency.store':
              store = attribute.value?.stringValue ?? null;
              break;
          }
        }
        if (key !== undefined && outcome !== undefined) rows.push({ service, key, outcome, store });
      }
    }
  }
}

/**
 * The batch approach's question: which keys executed (`miss`) in more than one dedup store of one
 * service? The naive query groups by key alone; but one request's key reaches every tier it
 * calls (payments and then ledger, each with its own store), so grouping by key alone reports
 * nearly every key that crossed two tiers. KEY_ONLY_SQL keeps that query for the note.
 */
export const CROSS_STORE_KEYS_SQL =
  "SELECT DISTINCT key FROM (SELECT service, key FROM attempts WHERE outcome = 'miss' GROUP BY service, key HAVING count(DISTINCT store) > 1)";
export const KEY_ONLY_SQL =
  "SELECT key FROM attempts WHERE outcome = 'miss' GROUP BY key HAVING count(DISTINCT store) > 1";
