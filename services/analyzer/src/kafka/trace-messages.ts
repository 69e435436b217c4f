import {
  type DecodedTraces,
  type DecodeOptions,
  decodeTraceRequest,
  decodeTraceRequestJson,
} from '@keyscope/otlp';
import type { TracesEncoding } from '../config.ts';

/**
 * Decodes one message of the Collector's traces topic as its kafka exporter writes it: the value
 * is an OTLP `TracesData` (wire-compatible with `ExportTraceServiceRequest`) in protobuf for
 * `otlp_proto` or in OTLP/JSON for `otlp_json`; the key is empty, or the trace id in hex with
 * `partition_traces_by_id` (then one message per trace); headers carry only what the exporter's
 * `include_metadata_keys`/`record_headers` add. None of that changes how the value decodes, so
 * the key and headers are ignored. Kafka-level compression (gzip) is undone by the client.
 *
 * Throws the otlp package's permanent KS_OTLP_* errors for bytes that are not OTLP.
 */
export function decodeTraceMessage(
  value: Buffer,
  encoding: TracesEncoding,
  options: DecodeOptions,
): DecodedTraces {
  return encoding === 'otlp_json'
    ? decodeTraceRequestJson(value, options)
    : decodeTraceRequest(value, options);
}
