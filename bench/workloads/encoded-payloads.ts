import { encodeTraces, type Span } from '@keyscope/otlp';

/**
 * OTLP `ExportTraceServiceRequest` bodies, encoded once before any timing: what senders post.
 * `spanCounts[i]` is the number of spans in `bodies[i]`.
 */
export interface EncodedPayloads {
  bodies: Uint8Array[];
  spanCounts: number[];
  spans: number;
  bytes: number;
  /** When the last span ends: "now" for a service receiving this traffic live. */
  endUnixMillis: number;
}

export function encodePayloads(batches: Iterable<Span[]>): EncodedPayloads {
  const bodies: Uint8Array[] = [];
  const spanCounts: number[] = [];
  let spans = 0;
  let bytes = 0;
  let endUnixMillis = Number.NEGATIVE_INFINITY;
  for (const batch of batches) {
    for (const span of batch) endUnixMillis = Math.max(endUnixMillis, span.endTimeUnixMillis);
    const body = encodeTraces(batch);
    bodies.push(body);
    spanCounts.push(batch.length);
    spans += batch.length;
    bytes += body.byteLength;
  }
  return { bodies, spanCounts, spans, bytes, endUnixMillis };
}

/** Spans in the first `requests` bodies when they are sent in order, cycling through the list. */
export function spansInRequests(payloads: EncodedPayloads, requests: number): number {
  const rounds = Math.floor(requests / payloads.bodies.length);
  let spans = rounds * payloads.spans;
  for (let i = 0; i < requests % payloads.bodies.length; i++) spans += payloads.spanCounts[i]!;
  return spans;
}
