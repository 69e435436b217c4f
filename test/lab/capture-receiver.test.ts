import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { analyzeRecording } from './analyze-recording.ts';
import { startCaptureReceiver } from './capture-receiver.ts';
import { readRecording } from './truth.ts';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('the capture receiver', () => {
  it('keeps what the OTLP protobuf exporter sends as JSON lines that keyscope analyze reads', async () => {
    const receiver = await startCaptureReceiver();
    try {
      const provider = new BasicTracerProvider({
        resource: resourceFromAttributes({ 'service.name': 'payments', 'service.instance.id': 'payments-a' }),
        spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: receiver.url }))],
      });
      const tracer = provider.getTracer('lab');
      for (const node of ['payments-a', 'payments-a']) {
        tracer
          .startSpan('POST /payments', {
            kind: SpanKind.SERVER,
            attributes: {
              'idempotency.key': 'k-1',
              'idempotency.outcome': 'miss',
              'idempotency.scope': 'node',
              'idempotency.store': `payments/node:${node}`,
              'idempotency.effect': 'committed',
              'http.route': '/payments',
            },
          })
          .end();
      }
      await provider.forceFlush();
      await provider.shutdown();
      const folder = mkdtempSync(join(tmpdir(), 'keyscope-lab-capture-'));
      folders.push(folder);
      const path = join(folder, 'capture.jsonl.gz');
      receiver.save(path);

      expect(receiver.requests).toBe(2);
      const spans = readRecording(path);
      expect(spans.map((span) => span.attributes['idempotency.key'])).toEqual(['k-1', 'k-1']);
      expect(spans[0]!.resource.attributes['service.instance.id']).toBe('payments-a');
      const report = await analyzeRecording(path);
      expect(report.findings.map((finding) => [finding.key, finding.class])).toEqual([
        ['k-1', 'same_store_duplicate'],
      ]);
    } finally {
      await receiver.close();
    }
  });
});
