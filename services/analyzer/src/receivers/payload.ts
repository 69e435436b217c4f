import type { OtlpSignal } from '@keyscope/otlp';
import type { PayloadBytes } from './payload-bytes.ts';

export type PayloadEncoding = 'protobuf' | 'json';

/**
 * One OTLP request body as a receiver hands it on: what it exports, how it is encoded, its bytes
 * decompressed. The ingest stage decodes it; the archive keeps it.
 */
export interface Payload {
  /** What the request exports: an ExportTraceServiceRequest, or an ExportLogsServiceRequest. */
  readonly signal: OtlpSignal;
  readonly encoding: PayloadEncoding;
  /** The request, decompressed. */
  readonly bytes: PayloadBytes;
  /** Its size on the wire, 0 when the transport does not show it. */
  readonly compressedBytes: number;
}
