import { encodeTraces, encodeTracesJson, type Span } from '@keyscope/otlp';

/** The part of a kafkajs producer this needs (kafkajs is the analyzer's dependency, not the tests'). */
export interface MessageProducer {
  send(record: {
    topic: string;
    acks?: number;
    messages: { key?: Buffer | null; value: Buffer | null; partition?: number }[];
  }): Promise<unknown>;
}

export interface Message {
  key: Buffer | null;
  value: Buffer;
}

export interface CollectorExportOptions {
  /** The exporter's `traces.encoding`. */
  readonly encoding: 'otlp_proto' | 'otlp_json';
  /** The exporter's `partition_traces_by_id`: one message per trace, keyed by the hex trace id. */
  readonly partitionTracesById?: boolean;
}

/**
 * What the OpenTelemetry Collector's kafka exporter writes for one batch of spans it exports:
 * without `partition_traces_by_id`, one unkeyed message whose value is the whole batch as OTLP
 * `TracesData` (protobuf, or OTLP/JSON); with it, one message per trace id, keyed by the trace
 * id's 32 lowercase hex characters. No headers (the exporter adds some only when told to, with
 * `include_metadata_keys` or `record_headers`), no compression (its default).
 */
export function collectorMessages(spans: readonly Span[], options: CollectorExportOptions): Message[] {
  const encode = (batch: readonly Span[]) =>
    options.encoding === 'otlp_json'
      ? Buffer.from(JSON.stringify(encodeTracesJson(batch)))
      : Buffer.from(encodeTraces(batch));
  if (options.partitionTracesById !== true) return [{ key: null, value: encode(spans) }];
  const byTrace = new Map<string, Span[]>();
  for (const span of spans) {
    const trace = byTrace.get(span.traceId);
    if (trace === undefined) byTrace.set(span.traceId, [span]);
    else trace.push(span);
  }
  return [...byTrace].map(([traceId, members]) => ({ key: Buffer.from(traceId), value: encode(members) }));
}

/** Exports spans in batches of `batchSpans`, as a Collector with a batch processor in front would. */
export async function exportAsCollector(
  producer: MessageProducer,
  topic: string,
  spans: readonly Span[],
  options: CollectorExportOptions & { batchSpans?: number },
): Promise<number> {
  const batchSpans = options.batchSpans ?? 300;
  let messages = 0;
  for (let i = 0; i < spans.length; i += batchSpans) {
    const batch = collectorMessages(spans.slice(i, i + batchSpans), options);
    // The exporter's default required_acks is 1 (the leader has it).
    await producer.send({ topic, acks: 1, messages: batch });
    messages += batch.length;
  }
  return messages;
}
