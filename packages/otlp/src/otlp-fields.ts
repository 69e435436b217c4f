import { protoMessage, tag, WireType } from './proto-message.ts';

/*
 * The OTLP trace and log messages keyscope decodes and encodes, with the field numbers and wire
 * types of opentelemetry-proto: opentelemetry/proto/collector/trace/v1/trace_service.proto and
 * collector/logs/v1/logs_service.proto (the requests and responses),
 * opentelemetry/proto/trace/v1/trace.proto (ResourceSpans to Status), logs/v1/logs.proto
 * (ResourceLogs to LogRecord), opentelemetry/proto/resource/v1/resource.proto and
 * opentelemetry/proto/common/v1/common.proto. Fields keyscope does not keep (trace_state, links,
 * flags, dropped counts, schema urls) are listed so that their wire types are still checked when
 * they are skipped.
 */
const { VARINT, I64, LEN, I32 } = WireType;

export const EXPORT_TRACE_SERVICE_REQUEST = protoMessage('ExportTraceServiceRequest', {
  resourceSpans: tag(1, LEN),
});

export const EXPORT_TRACE_SERVICE_RESPONSE = protoMessage('ExportTraceServiceResponse', {
  partialSuccess: tag(1, LEN),
});

export const EXPORT_TRACE_PARTIAL_SUCCESS = protoMessage('ExportTracePartialSuccess', {
  rejectedSpans: tag(1, VARINT),
  errorMessage: tag(2, LEN),
});

export const RESOURCE_SPANS = protoMessage('ResourceSpans', {
  resource: tag(1, LEN),
  scopeSpans: tag(2, LEN),
  schemaUrl: tag(3, LEN),
});

export const RESOURCE = protoMessage('Resource', {
  attributes: tag(1, LEN),
  droppedAttributesCount: tag(2, VARINT),
});

export const SCOPE_SPANS = protoMessage('ScopeSpans', {
  scope: tag(1, LEN),
  spans: tag(2, LEN),
  schemaUrl: tag(3, LEN),
});

export const INSTRUMENTATION_SCOPE = protoMessage('InstrumentationScope', {
  name: tag(1, LEN),
  version: tag(2, LEN),
  attributes: tag(3, LEN),
  droppedAttributesCount: tag(4, VARINT),
});

export const SPAN = protoMessage('Span', {
  traceId: tag(1, LEN),
  spanId: tag(2, LEN),
  traceState: tag(3, LEN),
  parentSpanId: tag(4, LEN),
  name: tag(5, LEN),
  kind: tag(6, VARINT),
  startTimeUnixNano: tag(7, I64),
  endTimeUnixNano: tag(8, I64),
  attributes: tag(9, LEN),
  droppedAttributesCount: tag(10, VARINT),
  events: tag(11, LEN),
  droppedEventsCount: tag(12, VARINT),
  links: tag(13, LEN),
  droppedLinksCount: tag(14, VARINT),
  status: tag(15, LEN),
  flags: tag(16, I32),
});

export const SPAN_EVENT = protoMessage('Span.Event', {
  timeUnixNano: tag(1, I64),
  name: tag(2, LEN),
  attributes: tag(3, LEN),
  droppedAttributesCount: tag(4, VARINT),
});

// Field 1 (deprecated_code) is reserved: old senders may still write it, so it is skipped as unknown.
export const STATUS = protoMessage('Status', {
  message: tag(2, LEN),
  code: tag(3, VARINT),
});

export const EXPORT_LOGS_SERVICE_REQUEST = protoMessage('ExportLogsServiceRequest', {
  resourceLogs: tag(1, LEN),
});

export const EXPORT_LOGS_SERVICE_RESPONSE = protoMessage('ExportLogsServiceResponse', {
  partialSuccess: tag(1, LEN),
});

export const EXPORT_LOGS_PARTIAL_SUCCESS = protoMessage('ExportLogsPartialSuccess', {
  rejectedLogRecords: tag(1, VARINT),
  errorMessage: tag(2, LEN),
});

export const RESOURCE_LOGS = protoMessage('ResourceLogs', {
  resource: tag(1, LEN),
  scopeLogs: tag(2, LEN),
  schemaUrl: tag(3, LEN),
});

export const SCOPE_LOGS = protoMessage('ScopeLogs', {
  scope: tag(1, LEN),
  logRecords: tag(2, LEN),
  schemaUrl: tag(3, LEN),
});

// Field 4 is reserved.
export const LOG_RECORD = protoMessage('LogRecord', {
  timeUnixNano: tag(1, I64),
  severityNumber: tag(2, VARINT),
  severityText: tag(3, LEN),
  body: tag(5, LEN),
  attributes: tag(6, LEN),
  droppedAttributesCount: tag(7, VARINT),
  flags: tag(8, I32),
  traceId: tag(9, LEN),
  spanId: tag(10, LEN),
  observedTimeUnixNano: tag(11, I64),
  eventName: tag(12, LEN),
});

export const KEY_VALUE = protoMessage('KeyValue', {
  key: tag(1, LEN),
  value: tag(2, LEN),
});

export const ANY_VALUE = protoMessage('AnyValue', {
  stringValue: tag(1, LEN),
  boolValue: tag(2, VARINT),
  intValue: tag(3, VARINT),
  doubleValue: tag(4, I64),
  arrayValue: tag(5, LEN),
  kvlistValue: tag(6, LEN),
  bytesValue: tag(7, LEN),
});

export const ARRAY_VALUE = protoMessage('ArrayValue', {
  values: tag(1, LEN),
});

export const KEY_VALUE_LIST = protoMessage('KeyValueList', {
  values: tag(1, LEN),
});
