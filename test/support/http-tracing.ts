import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { HttpInstrumentation, type HttpInstrumentationConfig } from '@opentelemetry/instrumentation-http';
import type { Resource } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type Sampler } from '@opentelemetry/sdk-trace-base';

/** The SDK started by `startHttpTracing`, and its one span processor. */
export interface HttpTracing {
  readonly sdk: NodeSDK;
  readonly processor: BatchSpanProcessor;
}

/**
 * Starts the OpenTelemetry Node SDK of a child process under test, for an `--import` module to
 * call before the program runs: the HTTP instrumentation configured by `http`, spans batched for
 * `scheduledDelayMillis` and exported over OTLP/HTTP (protobuf) to `otlpUrl`, no metrics or logs.
 * The exporter's own sends to `/v1/traces` are not the process's traffic and make no spans.
 */
export function startHttpTracing(options: {
  otlpUrl: string;
  resource: Resource;
  scheduledDelayMillis: number;
  sampler?: Sampler;
  http: HttpInstrumentationConfig;
}): HttpTracing {
  const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: options.otlpUrl }), {
    scheduledDelayMillis: options.scheduledDelayMillis,
  });
  const sdk = new NodeSDK({
    resource: options.resource,
    autoDetectResources: false,
    ...(options.sampler === undefined ? {} : { sampler: options.sampler }),
    spanProcessors: [processor],
    instrumentations: [
      new HttpInstrumentation({
        ...options.http,
        ignoreOutgoingRequestHook: (request) => request.path === '/v1/traces',
      }),
    ],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
  return { sdk, processor };
}

/** The value of environment variable `name`, which the process cannot run without. */
export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} must be set`);
  return value;
}
