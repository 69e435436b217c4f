export {
  type Arrival,
  type Attempt,
  type ClientAttempt,
  EFFECTS,
  type Effect,
  type ExtractedAttempts,
  HTTP_METHODS,
  type HttpMethod,
  INVALID_VALUE_REASONS,
  type InvalidValueCounts,
  type InvalidValueReason,
  type KeylessSend,
  type NodeActivity,
  OUTCOMES,
  type Outcome,
  type Placement,
  SCOPE_LEVELS,
  type ScopeLevel,
  type ServerAttempt,
  type SideEffect,
} from './attempt.ts';
export {
  type AttemptBatchCodecLimits,
  AttemptBatchDecoder,
  AttemptBatchEncoder,
  defaultAttemptBatchCodecLimits,
} from './attempt-batch-codec.ts';
export {
  ATTEMPT_FIELDS,
  ATTEMPT_KINDS,
  type AttemptField,
  type AttemptFields,
  type AttemptKind,
  attemptFromValues,
  attemptLiteral,
  compileFunction,
  createArrival,
  createClientAttempt,
  createKeylessSend,
  createServerAttempt,
  createSideEffect,
  type FieldCarriage,
  KEYLESS_SEND_FIELDS,
  literal,
} from './attempt-schema.ts';
export {
  ATTEMPTS_ERRORS,
  MAPPING_EMPTY_LIST,
  MAPPING_EMPTY_NAME,
  MAPPING_INVALID_VALUE,
  MAPPING_SYNTAX,
  MAPPING_UNKNOWN_KEY,
  MAPPING_WRONG_TYPE,
  SPAN_ENDS_BEFORE_START,
  SPAN_IN_FUTURE,
  SPAN_KEY_TOO_LONG,
  SPAN_NAME_TOO_LONG,
  SPAN_TOO_OLD,
} from './errors.ts';
export { extractAttempts } from './extract-attempts.ts';
export {
  addLatency,
  emptyLatency,
  LATENCY_BOUNDS_MILLIS,
  LATENCY_BUCKETS,
  latencyBucketOf,
  latencyQuantileMillis,
} from './latency-histogram.ts';
export { isLoggedDecision, withoutRepeatedLogDecisions } from './logged-decisions.ts';
export {
  defaultMapping,
  KEY_NAMESPACES,
  type KeyNamespace,
  loadMapping,
  MAPPING_FIELDS,
  type Mapping,
  type MappingField,
  type MappingSpans,
  mappingAttributeNames,
  mappingDecodeOptions,
  PLACEMENT_FIELDS,
  parseMapping,
} from './mapping.ts';
export { mergeExtracted } from './merge-extracted.ts';
export { partitionKey } from './partition-key.ts';
export {
  defaultSendLinkerLimits,
  SendLinker,
  type SendLinkerCounts,
  type SendLinkerLimits,
} from './send-linker.ts';
export {
  type CheckedAttempts,
  EARLIEST_SPAN_UNIX_MILLIS,
  SPAN_REFUSALS,
  type SpanLimits,
  type SpanRefusals,
} from './span-limits.ts';
export { endedBefore } from './span-order.ts';
export { derivedStoreId } from './store-id.ts';
