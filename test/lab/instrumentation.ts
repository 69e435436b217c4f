import { createKeyedSpanSampler, keyAttributesOf } from '@keyscope/gate';
import type { Attributes } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { AlwaysOffSampler, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * The OpenTelemetry Node SDK of every lab process (payments nodes, checkout), loaded with
 * `--import` before the program: the HTTP instrumentation, keyed spans kept, OTLP over HTTP/protobuf
 * to `LAB_OTLP_URL`. Spans wait up to `LAB_EXPORT_DELAY_MILLIS` in the batch, so a node killed
 * with SIGKILL loses what ended in its last moments and everything still in flight, as a real one
 * does. The program reads `node:http` through `createRequire` after this module ran: the
 * instrumentation patches the CommonJS module object, which an ESM named import would not see.
 */
const resourceAttributes = JSON.parse(requiredEnv('LAB_RESOURCE')) as Record<string, string>;
export const resource = resourceFromAttributes(resourceAttributes);

/** Sends so far per key in this process: the CLIENT span's `http.request.resend_count`. */
export const sendsOfKey = new Map<string, number>();

function startAttributes(request: Parameters<typeof keyAttributesOf>[0], counted: boolean): Attributes {
  const attributes = keyAttributesOf(request);
  const key = attributes['idempotency.key'];
  if (!counted || typeof key !== 'string') return attributes;
  const sends = sendsOfKey.get(key) ?? 0;
  sendsOfKey.set(key, sends + 1);
  return { ...attributes, 'http.request.resend_count': sends };
}

const sdk = new NodeSDK({
  resource,
  autoDetectResources: false,
  // Every keyed span is kept; the lab has no use for the rest.
  sampler: createKeyedSpanSampler({ otherwise: new AlwaysOffSampler() }),
  spanProcessors: [
    new BatchSpanProcessor(new OTLPTraceExporter({ url: requiredEnv('LAB_OTLP_URL') }), {
      scheduledDelayMillis: Number(process.env.LAB_EXPORT_DELAY_MILLIS ?? 1000),
    }),
  ],
  instrumentations: [
    new HttpInstrumentation({
      startIncomingSpanHook: (request) => startAttributes(request, false),
      startOutgoingSpanHook: (request) => startAttributes(request, true),
      // The OTLP exporter's own sends are not the lab's traffic.
      ignoreOutgoingRequestHook: (request) => request.path === '/v1/traces',
    }),
  ],
  metricReaders: [],
  logRecordProcessors: [],
});
sdk.start();

/** Flushes the batch: the program calls it before a clean exit. */
export function shutdownTelemetry(): Promise<void> {
  return sdk.shutdown();
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} must be set for a lab process`);
  return value;
}
