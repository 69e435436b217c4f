export { decodeCursor, encodeCursor } from './cursor.ts';
export { CURSOR_INVALID, STORE_NEWER_SCHEMA, STORE_UNAVAILABLE } from './errors.ts';
export {
  type FindingFilter,
  type IncidentFilter,
  KeyscopeStore,
  type OutboxEntry,
  type Page,
  type PageResult,
  type StoredIncident,
  type StoreOptions,
} from './keyscope-store.ts';
