import type { Span } from '@keyscope/otlp';
import { toReadableSpans } from '@keyscope/testkit/sdk';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';

/** What the exporter reports for one export: `code` 0 is success. */
export interface ExportResult {
  readonly code: number;
  readonly error?: Error;
}

/** Spans per export: the SDK's BatchSpanProcessor's default `maxExportBatchSize`. */
const BATCH_SPANS = 512;

/**
 * Sends `spans` to the OTLP/HTTP receiver on `port` of 127.0.0.1 with the real OpenTelemetry
 * exporter (protobuf), one export after another, and returns each export's result in order for
 * the test to assert on. The exporter is shut down before this returns.
 */
export async function exportOverOtlpHttp(
  port: number,
  spans: readonly Span[],
  options: { compression?: 'gzip' } = {},
): Promise<ExportResult[]> {
  const exporter = new OTLPTraceExporter({
    url: `http://127.0.0.1:${port}/v1/traces`,
    ...(options.compression === undefined ? {} : { compression: options.compression as never }),
  });
  const readable = toReadableSpans(spans);
  const results: ExportResult[] = [];
  for (let i = 0; i < readable.length; i += BATCH_SPANS) {
    results.push(
      await new Promise<ExportResult>((resolve) =>
        exporter.export(readable.slice(i, i + BATCH_SPANS), resolve),
      ),
    );
  }
  await exporter.shutdown();
  return results;
}
