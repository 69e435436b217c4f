import type { ConsumeResult } from './consumer.ts';
import { EXPORT_TRACE_PARTIAL_SUCCESS, EXPORT_TRACE_SERVICE_RESPONSE } from './otlp-fields.ts';
import { WireWriter } from './wire-writer.ts';

/**
 * `ExportTraceServiceResponse` (collector/trace/v1/trace_service.proto; fields in otlp-fields.ts):
 * an `ExportTracePartialSuccess` of rejected spans and an error message. The OTLP spec
 * says a server that accepted everything leaves partial_success unset, so that case is the empty
 * message (zero bytes in protobuf, `{}` in JSON).
 */
export function encodeExportResponse(result: ConsumeResult): Uint8Array {
  if (result.rejectedSpans === 0 && result.errorMessage === '') return new Uint8Array(0);
  const w = new WireWriter(64 + result.errorMessage.length * 3);
  const partialSuccess = w.beginMessage(EXPORT_TRACE_SERVICE_RESPONSE.tag.partialSuccess);
  if (result.rejectedSpans !== 0) {
    w.tag(EXPORT_TRACE_PARTIAL_SUCCESS.tag.rejectedSpans);
    w.int64(result.rejectedSpans);
  }
  if (result.errorMessage !== '')
    w.stringField(EXPORT_TRACE_PARTIAL_SUCCESS.tag.errorMessage, result.errorMessage);
  w.endMessage(partialSuccess);
  return w.finish();
}

/** The OTLP/JSON form of `encodeExportResponse` (int64 as a decimal string, as protobuf JSON writes it). */
export function exportResponseJson(result: ConsumeResult): object {
  if (result.rejectedSpans === 0 && result.errorMessage === '') return {};
  return {
    partialSuccess: { rejectedSpans: String(result.rejectedSpans), errorMessage: result.errorMessage },
  };
}
