import type { ConsumeResult } from './consumer.ts';
import {
  EXPORT_LOGS_PARTIAL_SUCCESS,
  EXPORT_LOGS_SERVICE_RESPONSE,
  EXPORT_TRACE_PARTIAL_SUCCESS,
  EXPORT_TRACE_SERVICE_RESPONSE,
} from './otlp-fields.ts';
import { WireWriter } from './wire-writer.ts';

/** What an OTLP request exports: its service's response names what it rejected after it. */
export type OtlpSignal = 'traces' | 'logs';

const RESPONSE_TAGS: Record<OtlpSignal, { partialSuccess: number; rejected: number; errorMessage: number }> =
  {
    traces: {
      partialSuccess: EXPORT_TRACE_SERVICE_RESPONSE.tag.partialSuccess,
      rejected: EXPORT_TRACE_PARTIAL_SUCCESS.tag.rejectedSpans,
      errorMessage: EXPORT_TRACE_PARTIAL_SUCCESS.tag.errorMessage,
    },
    logs: {
      partialSuccess: EXPORT_LOGS_SERVICE_RESPONSE.tag.partialSuccess,
      rejected: EXPORT_LOGS_PARTIAL_SUCCESS.tag.rejectedLogRecords,
      errorMessage: EXPORT_LOGS_PARTIAL_SUCCESS.tag.errorMessage,
    },
  };

/**
 * `ExportTraceServiceResponse` (collector/trace/v1/trace_service.proto; fields in otlp-fields.ts):
 * an `ExportTracePartialSuccess` of rejected spans and an error message; for `logs`,
 * `ExportLogsServiceResponse` with the rejected log records (`result.rejectedSpans` counts what
 * the consumer refused: a log record reaches it as one span). The OTLP spec says a server that
 * accepted everything leaves partial_success unset, so that case is the empty message (zero bytes
 * in protobuf, `{}` in JSON).
 */
export function encodeExportResponse(result: ConsumeResult, signal: OtlpSignal = 'traces'): Uint8Array {
  if (result.rejectedSpans === 0 && result.errorMessage === '') return new Uint8Array(0);
  const tags = RESPONSE_TAGS[signal];
  const w = new WireWriter(64 + result.errorMessage.length * 3);
  const partialSuccess = w.beginMessage(tags.partialSuccess);
  if (result.rejectedSpans !== 0) {
    w.tag(tags.rejected);
    w.int64(result.rejectedSpans);
  }
  if (result.errorMessage !== '') w.stringField(tags.errorMessage, result.errorMessage);
  w.endMessage(partialSuccess);
  return w.finish();
}

/** The OTLP/JSON form of `encodeExportResponse` (int64 as a decimal string, as protobuf JSON writes it). */
export function exportResponseJson(result: ConsumeResult, signal: OtlpSignal = 'traces'): object {
  if (result.rejectedSpans === 0 && result.errorMessage === '') return {};
  const rejected = String(result.rejectedSpans);
  return {
    partialSuccess:
      signal === 'logs'
        ? { rejectedLogRecords: rejected, errorMessage: result.errorMessage }
        : { rejectedSpans: rejected, errorMessage: result.errorMessage },
  };
}
