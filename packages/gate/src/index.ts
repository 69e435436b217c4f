export type {
  CompletedRecord,
  DedupRecord,
  DedupStore,
  InProgressRecord,
} from './dedup-store.ts';
export {
  GATE_ERRORS,
  type GateErrorDefinition,
  IdempotencyConfigError,
  IdempotencyRequestError,
  type RequestErrorDefinition,
  type StartupErrorDefinition,
} from './errors.ts';
export { type IdempotencyPluginOptions, idempotencyPlugin, type RouteIdempotency } from './fastify-plugin.ts';
export { requestFingerprint } from './fingerprint.ts';
export {
  type Admission,
  createIdempotencyGate,
  type Execution,
  type GateRequest,
  type IdempotencyGate,
  type IdempotencyGateOptions,
  type RunOptions,
  type RunResult,
} from './gate.ts';
export { checkIdempotencyKey, keyFromHeader, MAX_KEY_LENGTH } from './idempotency-key.ts';
export { IdempotencyScopeError } from './idempotency-scope-error.ts';
export { keyAttributesOf, type RequestWithHeaders } from './key-attributes.ts';
export {
  createKeyedSpanSampler,
  DEFAULT_KEY_ATTRIBUTES,
  type KeyedSpanSamplerOptions,
  type Sampler,
  type SamplingResult,
} from './keyed-span-sampler.ts';
export { createMemoryDedupStore } from './memory-store.ts';
export { type Placement, placementFromResource } from './placement.ts';
export {
  checkScopeConfig,
  PINNINGS,
  type Pinning,
  PLACEMENT_LEVELS,
  type PlacementLevel,
  type RetryEndpoint,
  type RetryScope,
  SCOPE_LEVELS,
  type ScopeConfig,
  type ScopeLevel,
} from './scope-config.ts';
export {
  EFFECTS,
  type Effect,
  IDEMPOTENCY_ATTRIBUTES,
  OUTCOMES,
  type Outcome,
  recordDecision,
} from './span-decision.ts';
export { createSqliteDedupStore, type SqliteDedupStoreOptions } from './sqlite-store.ts';
export { storeIdFor } from './store-id.ts';
export { type DedupMode, dedupMode, smallestCoveringLevel, verify } from './verify.ts';
