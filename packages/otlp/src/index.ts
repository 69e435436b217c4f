export { createAttributes } from './attributes.ts';
export { ACCEPTED_ALL, type ConsumeResult, type SpanConsumer } from './consumer.ts';
export { decodeTraceRequestJson, decodeTracesJson } from './decode-json.ts';
export { decodeLogRequestJson, decodeLogsJson } from './decode-logs-json.ts';
export {
  createLogsDecoder,
  decodeLogRequest,
  decodeLogs,
  type LogsDecoder,
} from './decode-logs-protobuf.ts';
export {
  DEFAULT_MAX_DEPTH,
  type DecodedTraces,
  type DecodeOptions,
  type KeyedAttributeSelection,
  MAX_NESTING_DEPTH,
} from './decode-options.ts';
export {
  createTracesDecoder,
  decodeTraceRequest,
  decodeTraces,
  type TracesDecoder,
} from './decode-protobuf.ts';
export { encodeTracesJson } from './encode-json.ts';
export { encodeLogs, encodeLogsJson } from './encode-logs.ts';
export { encodeTraces } from './encode-protobuf.ts';
export {
  OTLP_ERRORS,
  OTLP_FIELD_NUMBER,
  OTLP_ID_LENGTH,
  OTLP_ID_ZERO,
  OTLP_JSON,
  OTLP_NESTING,
  OTLP_TIME_RANGE,
  OTLP_TRUNCATED,
  OTLP_UTF8,
  OTLP_VARINT_TOO_LONG,
  OTLP_WIRE_TYPE,
} from './errors.ts';
export { encodeExportResponse, exportResponseJson, type OtlpSignal } from './export-response.ts';
/** Lowercase hex of 8- and 16-byte ids as decoding writes them: one flat string each. */
export { hexOf8, hexOf16 } from './hex.ts';
export type { DecodedLogs, LogRecord } from './log-record.ts';
export { loggedSpanId, logRecordSpan, spansOfLogRecords } from './log-record-spans.ts';
export { encodeRpcStatus, rpcStatusJson } from './rpc-status.ts';
export {
  type Attributes,
  type AttributeValue,
  type InstrumentationScope,
  type Resource,
  type Span,
  type SpanEvent,
  SpanKind,
  type SpanStatus,
  StatusCode,
} from './span.ts';
