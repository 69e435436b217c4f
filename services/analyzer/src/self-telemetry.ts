import { KeyscopeError } from '@keyscope/errors';
import type { ServeConfig } from './config.ts';
import { ANALYZER_CONFIG_INVALID } from './errors.ts';
import type { Logger } from './logger.ts';

export interface SelfTelemetry {
  stop(): Promise<void>;
}

/**
 * keyscope traces itself with the OpenTelemetry SDK when `telemetry.otlpEndpoint` is set — off by
 * default. Its own spans never go to its own receivers unless `telemetry.allowSelfIngest` says so:
 * every ingest would otherwise produce spans to ingest, and keyscope would feed on itself.
 */
export async function startSelfTelemetry(config: ServeConfig, logger: Logger): Promise<SelfTelemetry> {
  const endpoint = config.telemetry.otlpEndpoint;
  if (endpoint === '') return { stop: async () => {} };
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new KeyscopeError(
      ANALYZER_CONFIG_INVALID,
      `telemetry.otlpEndpoint must be a URL, received ${JSON.stringify(endpoint)}`,
    );
  }
  if (pointsAtOwnReceiver(url, config) && !config.telemetry.allowSelfIngest) {
    throw new KeyscopeError(
      ANALYZER_CONFIG_INVALID,
      `telemetry.otlpEndpoint ${endpoint} is keyscope's own OTLP receiver; set telemetry.allowSelfIngest to trace keyscope into itself`,
    );
  }
  // Loaded only when asked for: the SDK is sizeable and most deployments leave this off.
  const [{ NodeSDK }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
  ]);
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': 'keyscope' }),
    traceExporter: new OTLPTraceExporter({ url: endpoint }),
    instrumentations: [],
  });
  sdk.start();
  logger.info(`telemetry: tracing keyscope to ${endpoint}`);
  return { stop: () => sdk.shutdown() };
}

function pointsAtOwnReceiver(url: URL, config: ServeConfig): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const local =
    host === 'localhost' || host === '::1' || host.startsWith('127.') || host === config.otlp.http.host;
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return local && (port === config.otlp.http.port || port === config.otlp.grpc.port);
}
