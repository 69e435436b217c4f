import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * The OpenTelemetry Node SDK of a service that records no idempotency attributes and lets the HTTP
 * instrumentation capture its headers instead (the README's "Services that only capture
 * headers"): the key from the request, the replay header from the response. Loaded with `--import`
 * before the program, spans exported over OTLP/HTTP (protobuf) to `REPLAY_OTLP_URL`.
 */
const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: requiredEnv('REPLAY_OTLP_URL') }), {
  scheduledDelayMillis: 200,
});
const sdk = new NodeSDK({
  resource: resourceFromAttributes(JSON.parse(requiredEnv('REPLAY_RESOURCE')) as Record<string, string>),
  autoDetectResources: false,
  spanProcessors: [processor],
  instrumentations: [
    new HttpInstrumentation({
      headersToSpanAttributes: {
        server: { requestHeaders: ['idempotency-key'], responseHeaders: ['idempotent-replayed'] },
      },
      // The OTLP exporter's own sends are not the service's traffic.
      ignoreOutgoingRequestHook: (request) => request.path === '/v1/traces',
    }),
  ],
  metricReaders: [],
  logRecordProcessors: [],
});
sdk.start();

/** Exports every span ended so far. */
export function flushTelemetry(): Promise<void> {
  return processor.forceFlush();
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} must be set`);
  return value;
}
