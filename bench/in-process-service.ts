import {
  type IngestCountersSnapshot,
  type RunningService,
  resolveServeConfig,
  silentLogger,
  startReceivers,
  startServe,
} from '@keyscope/analyzer';
import type { DecodeOptions, SpanConsumer } from '@keyscope/otlp';

/**
 * keyscope's service started in this process, on free loopback ports, with its default settings:
 * either the OTLP receivers alone in front of a consumer, or the whole embedded service as
 * `keyscope serve` runs it (receivers → detection pipeline → SQLite, API, alerts, timers).
 */

export interface Receivers {
  /** `http://127.0.0.1:PORT/v1/traces` */
  tracesUrl: string;
  /**
   * Spans of the payloads the receivers accepted, over both transports: every span, also those
   * the decode options leave out and the consumer is never given.
   */
  spansAccepted(): number;
  stop(): Promise<void>;
}

/** The OTLP receivers in front of `consumer`, decoding with `decodeOptions` (every attribute when absent). */
export async function startLoopbackReceivers(
  consumer: SpanConsumer,
  decodeOptions?: DecodeOptions,
): Promise<Receivers> {
  const config = resolveServeConfig({ otlp: { http: { port: 0 }, grpc: { port: 0 } } });
  const running = await startReceivers(config, { consumer, decodeOptions, logger: silentLogger });
  return {
    tracesUrl: tracesUrl(running.addresses.otlpHttp),
    spansAccepted: () => spansAccepted(running.counters.snapshot()),
    stop: () => running.stop(),
  };
}

export interface EmbeddedService extends Receivers {
  service: RunningService;
}

/**
 * The embedded service over the SQLite file `dbPath`. Its clock (ticks, quiet periods, retention)
 * reads `nowUnixMillis`: simulated traffic carries simulated times, and against the real clock
 * the service would treat it as days old and expire it while it arrives.
 */
export async function startEmbeddedService(
  dbPath: string,
  nowUnixMillis: () => number,
): Promise<EmbeddedService> {
  const config = resolveServeConfig({
    db: { path: dbPath },
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
  });
  const service = await startServe(config, { logger: silentLogger, now: nowUnixMillis });
  return {
    service,
    tracesUrl: tracesUrl(service.addresses.otlpHttp),
    spansAccepted: () => spansAccepted(service.ingestCounts()),
    stop: () => service.stop(),
  };
}

function spansAccepted({ http, grpc }: IngestCountersSnapshot): number {
  return http.spansAccepted + grpc.spansAccepted;
}

/** The attribute filter the embedded service's pipeline asks its receivers to decode with. */
export async function serviceDecodeOptions(): Promise<DecodeOptions> {
  const { service } = await startEmbeddedService(':memory:', Date.now);
  try {
    return service.pipeline.decodeOptions;
  } finally {
    await service.stop();
  }
}

function tracesUrl(address: { host: string; port: number }): string {
  return `http://${address.host}:${address.port}/v1/traces`;
}
