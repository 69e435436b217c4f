import type { ConsumeResult } from './consumer.ts';
import { WireWriter } from './wire-writer.ts';

/**
 * `ExportTraceServiceResponse` (collector/trace/v1/trace_service.proto): `partial_success = 1`, an
 * `ExportTracePartialSuccess { int64 rejected_spans = 1; string error_message = 2 }`. The OTLP spec
 * says a server that accepted everything leaves partial_success unset, so that case is the empty
 * message (zero bytes in protobuf, `{}` in JSON).
 */
export function encodeExportResponse(result: ConsumeResult): Uint8Array {
  if (result.rejectedSpans === 0 && result.errorMessage === '') return new Uint8Array(0);
  const w = new WireWriter(64 + result.errorMessage.length * 3);
  const partialSuccess = w.beginMessage(1);
  if (result.rejectedSpans !== 0) {
    w.tag(1, 0);
    w.int64(result.rejectedSpans);
  }
  if (result.errorMessage !== '') w.stringField(2, result.errorMessage);
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
