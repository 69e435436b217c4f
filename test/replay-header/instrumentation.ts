import { resourceFromAttributes } from '@opentelemetry/resources';
import { requiredEnv, startHttpTracing } from '../support/http-tracing.ts';

/**
 * The OpenTelemetry Node SDK of a service that records no idempotency attributes and lets the HTTP
 * instrumentation capture its headers instead (the README's "Services that only capture
 * headers"): the key from the request, the replay header from the response. Loaded with `--import`
 * before the program, spans exported over OTLP/HTTP (protobuf) to `REPLAY_OTLP_URL`.
 */
const { processor } = startHttpTracing({
  otlpUrl: requiredEnv('REPLAY_OTLP_URL'),
  resource: resourceFromAttributes(JSON.parse(requiredEnv('REPLAY_RESOURCE')) as Record<string, string>),
  scheduledDelayMillis: 200,
  http: {
    headersToSpanAttributes: {
      server: { requestHeaders: ['idempotency-key'], responseHeaders: ['idempotent-replayed'] },
    },
  },
});

/** Exports every span ended so far. */
export function flushTelemetry(): Promise<void> {
  return processor.forceFlush();
}
