import { createKeyedSpanSampler, keyAttributesOf } from '@keyscope/gate';
import type { Attributes } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler } from '@opentelemetry/sdk-trace-base';
import { requiredEnv, startHttpTracing } from '../support/http-tracing.ts';

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

const { sdk } = startHttpTracing({
  otlpUrl: requiredEnv('LAB_OTLP_URL'),
  resource,
  scheduledDelayMillis: Number(process.env.LAB_EXPORT_DELAY_MILLIS ?? 1000),
  // Every keyed span is kept; the lab has no use for the rest.
  sampler: createKeyedSpanSampler({ otherwise: new AlwaysOffSampler() }),
  http: {
    startIncomingSpanHook: (request) => startAttributes(request, false),
    startOutgoingSpanHook: (request) => startAttributes(request, true),
  },
});

/** Flushes the batch: the program calls it before a clean exit. */
export function shutdownTelemetry(): Promise<void> {
  return sdk.shutdown();
}
