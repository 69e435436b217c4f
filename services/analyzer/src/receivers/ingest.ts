import { KeyscopeError } from '@keyscope/errors';
import {
  ACCEPTED_ALL,
  type ConsumeResult,
  type DecodedTraces,
  type DecodeOptions,
  decodeLogRequest,
  decodeLogRequestJson,
  decodeTraceRequest,
  decodeTraceRequestJson,
  type OtlpSignal,
  type SpanConsumer,
  spansOfLogRecords,
} from '@keyscope/otlp';
import { ANALYZER_SATURATED } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Admission, AdmissionSlot } from './admission.ts';
import type { IngestCounters, RejectReason, Transport } from './ingest-counters.ts';
import { INTERNAL_FAILURE, type IngestFailure, ingestFailureFor } from './ingest-failure.ts';
import type { Payload } from './payload.ts';
import type { PayloadArchive } from './payload-archive.ts';

export type IngestOutcome =
  | { readonly accepted: true; readonly result: ConsumeResult }
  | { readonly accepted: false; readonly failure: IngestFailure };

export interface IngestOptions {
  readonly consumer: SpanConsumer;
  readonly admission: Admission;
  readonly counters: IngestCounters;
  readonly logger: Logger;
  /** What the decoders materialize (e.g. only the attributes the consumer reads); all by default. */
  readonly decodeOptions?: DecodeOptions;
  /** Given every payload answered 200 / OK that holds a span (log record); none when `archive.path` is ''. */
  readonly archive?: PayloadArchive;
}

/**
 * What both receivers do with a payload once their transport has delivered it: admit it, decode it,
 * hand its spans to the consumer, count the result. The receivers only translate the outcome to
 * their wire format, so OTLP/HTTP and OTLP/gRPC answer the same payload the same way.
 *
 * Traces and logs go the same way: a logs payload's records reach the consumer as the spans of the
 * decisions they state (`spansOfLogRecords`), one span per record, so the same admission bounds,
 * time window and size limits apply to them and the consumer's rejections are the records'.
 * Log records are counted apart from spans (IngestCounters).
 *
 * A receiver calls `received` once per payload, then `admit` once it has the whole body (or `refuse`
 * when it refuses the payload at the door), then `export` with the slot it was given.
 */
export class Ingest {
  readonly #options: IngestOptions;

  constructor(options: IngestOptions) {
    this.#options = options;
  }

  received(transport: Transport): void {
    this.#options.counters.payloadReceived(transport);
  }

  /** A slot to hold the payload in, or the saturation failure to answer with. */
  admit(transport: Transport): AdmissionSlot | IngestFailure {
    const slot = this.#options.admission.tryAdmit();
    if (slot) return slot;
    const { requests } = this.#options.admission.inFlight();
    return this.refuse(
      transport,
      new KeyscopeError(ANALYZER_SATURATED, `receivers already hold ${requests} unacknowledged requests`),
    );
  }

  /**
   * Counts a payload refused for `error` (`items` of it, spans or log records by `signal`, when
   * known) and says how to answer.
   */
  refuse(transport: Transport, error: unknown, items = 0, signal: OtlpSignal = 'traces'): IngestFailure {
    const failure = ingestFailureFor(error);
    if (failure === INTERNAL_FAILURE) {
      this.#options.logger.error(
        `otlp-${transport}: ${error instanceof Error ? error.stack : String(error)}`,
      );
    }
    this.#options.counters.payloadRejected(transport, failure.reason, items, signal);
    return failure;
  }

  /** The sender went away before its payload arrived: counted, nobody to answer. */
  aborted(transport: Transport): void {
    this.#options.counters.payloadRejected(transport, 'request_aborted', 0);
  }

  /** Decodes the payload and hands its spans to the consumer; always releases `slot`. */
  async export(transport: Transport, slot: AdmissionSlot, payload: Payload): Promise<IngestOutcome> {
    const { counters, consumer } = this.#options;
    const { signal } = payload;
    try {
      counters.bytesReceived(transport, payload.compressedBytes, payload.bytes.byteLength);
      let decoded: DecodedTraces;
      try {
        const { decodeOptions } = this.#options;
        decoded = payload.bytes.read((bytes) => decodePayload(payload, bytes, decodeOptions));
      } catch (error) {
        return { accepted: false, failure: this.refuse(transport, error, 0, signal) };
      }
      // Every span (log record) of the payload counts, also those the decode options left out.
      const { spans, spanCount: count } = decoded;
      // The OTLP spec asks for success on an empty request. With no span decoded (none, or only
      // spans the consumer does not read), the consumer has nothing to do.
      if (spans.length === 0) {
        counters.payloadAccepted(transport, count, signal);
        if (count > 0) this.#options.archive?.append(payload);
        return { accepted: true, result: ACCEPTED_ALL };
      }
      if (!slot.reserveSpans(count)) {
        const { spans: held } = this.#options.admission.inFlight();
        const error = new KeyscopeError(
          ANALYZER_SATURATED,
          `receivers already hold ${held} unacknowledged spans; this payload has ${count}${signal === 'logs' ? ' log records' : ''}`,
        );
        return { accepted: false, failure: this.refuse(transport, error, count, signal) };
      }
      let result: ConsumeResult;
      try {
        result = await consumer.consumeSpans(spans);
      } catch (error) {
        return { accepted: false, failure: this.refuse(transport, error, count, signal) };
      }
      const rejected = Math.min(Math.max(result.rejectedSpans, 0), count);
      counters.payloadAccepted(transport, count - rejected, signal);
      // By the consumer's codes where it gave them; whatever is left has no reason but refusal.
      let unexplained = rejected;
      for (const [reason, n] of Object.entries(result.rejectedByReason ?? {})) {
        const items = Math.min(Math.max(n, 0), unexplained);
        if (!reason.startsWith('KS_') || items === 0) continue;
        counters.itemsRejected(transport, reason as RejectReason, items, signal);
        unexplained -= items;
      }
      counters.itemsRejected(transport, 'consumer_refused', unexplained, signal);
      // Whole, spans refused one by one included: analyze applies its own rules to them.
      this.#options.archive?.append(payload);
      return { accepted: true, result };
    } finally {
      slot.release();
    }
  }
}

/**
 * The payload's spans, and how many spans (log records) it held. A logs payload's records become
 * spans here (one each), after decoding, so that a payload the decoder refuses is refused whole.
 */
function decodePayload(
  payload: Payload,
  bytes: Uint8Array,
  options: DecodeOptions | undefined,
): DecodedTraces {
  if (payload.signal === 'traces') {
    return payload.encoding === 'json'
      ? decodeTraceRequestJson(bytes, options)
      : decodeTraceRequest(bytes, options);
  }
  const { records, recordCount } =
    payload.encoding === 'json' ? decodeLogRequestJson(bytes, options) : decodeLogRequest(bytes, options);
  return { spans: spansOfLogRecords(records), spanCount: recordCount };
}

export function isIngestFailure(value: AdmissionSlot | IngestFailure): value is IngestFailure {
  return 'httpStatus' in value;
}
