export { decodeCursor, encodeCursor } from './cursor.ts';
export { CURSOR_INVALID, STORE_CORRUPT, STORE_NEWER_SCHEMA, STORE_UNAVAILABLE } from './errors.ts';
export { INTEGRITY_CHECKS, type IntegrityCheck } from './integrity-check.ts';
export {
  type FindingFilter,
  type IncidentFilter,
  KeyscopeStore,
  type OutboxEntry,
  type Page,
  type PageResult,
  type StoredIncident,
  type StoreOptions,
  type WriteFailure,
} from './keyscope-store.ts';
export { ATTEMPTS_KEPT_MILLIS, type SizePurge, TARGET_FRACTION } from './size-bound.ts';
