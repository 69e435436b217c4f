export { decodeCursor, encodeCursor } from './cursor.ts';
export {
  CURSOR_INVALID,
  STORE_CORRUPT,
  STORE_NEWER_SCHEMA,
  STORE_PRE_RELEASE_SCHEMA,
  STORE_UNAVAILABLE,
} from './errors.ts';
export { EXCERPT_ATTEMPTS, type FindingExcerpt, type FindingFilter, type Findings } from './finding-table.ts';
export type { IncidentParts } from './incident-part-table.ts';
export type { IncidentFilter, Incidents, StoredIncident } from './incident-table.ts';
export { INTEGRITY_CHECKS, type IntegrityCheck } from './integrity-check.ts';
export { KeyscopeStore, type StoreOptions } from './keyscope-store.ts';
export type { Outbox, OutboxDelivery, OutboxEnqueue, OutboxEntry } from './outbox-table.ts';
export type { Page, PageResult } from './page.ts';
export type { RetentionCutoffs } from './retention.ts';
export type { RoutingEventFilter, RoutingEvents, StoredRoutingEvent } from './routing-event-table.ts';
export type { ScopeTiers } from './scope-tier-table.ts';
export { ATTEMPTS_KEPT_MILLIS, type SizePurge, TARGET_FRACTION } from './size-bound.ts';
export type { NamedState } from './state-table.ts';
export type { WriteFailure } from './write-failures.ts';
