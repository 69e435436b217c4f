import type { OtlpSignal } from '@keyscope/otlp';

/**
 * What the receivers took in and what they refused, per transport. Plain in-memory counters: the
 * /metrics endpoint reads `snapshot()` and exports them, so nothing here knows about Prometheus.
 * Payloads are counted whatever they export; their items by signal (spans, log records).
 */

export type Transport = 'http' | 'grpc';

/**
 * Why a payload or span was refused, from a closed list: the receiver's own reasons below, or the
 * `KS_*` code of the KeyscopeError a decoder or consumer threw, or of the rule a consumer refused
 * single spans under (`ConsumeResult.rejectedByReason`, e.g. `KS_SPAN_TOO_OLD`) — closed too:
 * codes are declared once, at load, in each package's errors.ts. Anything else counts as
 * `internal_error`.
 */
export const RECEIVER_REJECT_REASONS = [
  'body_too_large',
  'unsupported_media_type',
  'unsupported_content_encoding',
  'bad_compression',
  /** The request's headers, or its body, did not arrive within their timeout. */
  'headers_timeout',
  'body_timeout',
  'saturated',
  'shutting_down',
  /** An OTLP/gRPC message past `otlp.grpc.maxReceiveMessageBytes`, or not arrived in time. */
  'message_too_large',
  'message_timeout',
  /** An OTLP/gRPC call that is not one length-prefixed message. */
  'malformed_message',
  /** The sender closed the connection (or cancelled the gRPC call) before its body arrived. */
  'request_aborted',
  /** Spans the consumer refused one by one without naming a code, answered with partial_success. */
  'consumer_refused',
  'internal_error',
] as const;
export type ReceiverRejectReason = (typeof RECEIVER_REJECT_REASONS)[number];
export type RejectReason = ReceiverRejectReason | `KS_${string}`;

export interface TransportCounts {
  payloadsReceived: number;
  /** Payloads answered 200 / OK, including partial successes. */
  payloadsAccepted: number;
  payloadsRejected: Record<string, number>;
  spansAccepted: number;
  /** Only spans whose count was known: a payload refused before decoding counts no spans. */
  spansRejected: Record<string, number>;
  /** Log records, counted as spans are (`POST /v1/logs`, `LogsService/Export`). */
  logRecordsAccepted: number;
  logRecordsRejected: Record<string, number>;
  /** Bytes as they arrived on the wire (a gRPC message without its 5-byte prefix). */
  bytesReceivedCompressed: number;
  bytesReceivedDecompressed: number;
}

export type IngestCountersSnapshot = Record<Transport, TransportCounts>;

export class IngestCounters {
  readonly #counts: IngestCountersSnapshot = { http: emptyCounts(), grpc: emptyCounts() };

  payloadReceived(transport: Transport): void {
    this.#counts[transport].payloadsReceived += 1;
  }

  bytesReceived(transport: Transport, compressedBytes: number, decompressedBytes: number): void {
    const counts = this.#counts[transport];
    counts.bytesReceivedCompressed += compressedBytes;
    counts.bytesReceivedDecompressed += decompressedBytes;
  }

  /** A payload answered 200 / OK, with `accepted` of its items (spans, or log records for `logs`). */
  payloadAccepted(transport: Transport, accepted: number, signal: OtlpSignal = 'traces'): void {
    const counts = this.#counts[transport];
    counts.payloadsAccepted += 1;
    if (signal === 'logs') counts.logRecordsAccepted += accepted;
    else counts.spansAccepted += accepted;
  }

  payloadRejected(
    transport: Transport,
    reason: RejectReason,
    items: number,
    signal: OtlpSignal = 'traces',
  ): void {
    const counts = this.#counts[transport];
    increment(counts.payloadsRejected, reason, 1);
    this.itemsRejected(transport, reason, items, signal);
  }

  /** Items (spans, or log records for `logs`) refused for `reason`. */
  itemsRejected(
    transport: Transport,
    reason: RejectReason,
    items: number,
    signal: OtlpSignal = 'traces',
  ): void {
    if (items <= 0) return;
    const counts = this.#counts[transport];
    increment(signal === 'logs' ? counts.logRecordsRejected : counts.spansRejected, reason, items);
  }

  /** A copy: later counting never changes a snapshot already taken. */
  snapshot(): IngestCountersSnapshot {
    return { http: copyCounts(this.#counts.http), grpc: copyCounts(this.#counts.grpc) };
  }
}

function emptyCounts(): TransportCounts {
  return {
    payloadsReceived: 0,
    payloadsAccepted: 0,
    payloadsRejected: {},
    spansAccepted: 0,
    spansRejected: {},
    logRecordsAccepted: 0,
    logRecordsRejected: {},
    bytesReceivedCompressed: 0,
    bytesReceivedDecompressed: 0,
  };
}

function copyCounts(counts: TransportCounts): TransportCounts {
  return {
    ...counts,
    payloadsRejected: { ...counts.payloadsRejected },
    spansRejected: { ...counts.spansRejected },
    logRecordsRejected: { ...counts.logRecordsRejected },
  };
}

function increment(table: Record<string, number>, reason: RejectReason, by: number): void {
  table[reason] = (table[reason] ?? 0) + by;
}
