import { resolveServeConfig, silentLogger, startReceivers } from '@keyscope/analyzer';
import { defaultMapping } from '@keyscope/attempts';
import { defaultDetectorConfig } from '@keyscope/detector';
import type { DecodeOptions, SpanConsumer } from '@keyscope/otlp';
import { KeyscopeStore } from '@keyscope/store';
// @keyscope/analyzer does not export its pipeline yet; import it from the package's package
// entry once it does.
import { DetectionPipeline } from '../services/analyzer/src/pipeline/detection-pipeline.ts';

/**
 * keyscope's embedded service, assembled in this process the way `keyscope serve` assembles it:
 * the OTLP receivers in front of a consumer, and the detection pipeline over a SQLite file.
 */

export interface Receivers {
  /** `http://127.0.0.1:PORT/v1/traces` */
  tracesUrl: string;
  stop(): Promise<void>;
}

/**
 * OTLP/HTTP and OTLP/gRPC receivers on free loopback ports, with the service's default limits,
 * decoding with `decodeOptions` (the consumer's filter; every attribute when absent).
 */
export async function startLoopbackReceivers(
  consumer: SpanConsumer,
  decodeOptions?: DecodeOptions,
): Promise<Receivers> {
  const config = resolveServeConfig({ otlp: { http: { port: 0 }, grpc: { port: 0 } } });
  const running = await startReceivers(config, { consumer, decodeOptions, logger: silentLogger });
  const { host, port } = running.addresses.otlpHttp;
  return { tracesUrl: `http://${host}:${port}/v1/traces`, stop: () => running.stop() };
}

export interface PersistedPipeline {
  pipeline: DetectionPipeline;
  store: KeyscopeStore;
}

/** The service's pipeline (default mapping and detector settings) over the SQLite file `dbPath`. */
export function createPersistedPipeline(dbPath: string): PersistedPipeline {
  const store = new KeyscopeStore({ path: dbPath });
  const pipeline = new DetectionPipeline({
    mapping: defaultMapping(),
    detectorConfig: defaultDetectorConfig(),
    store,
    logger: silentLogger,
  });
  return { pipeline, store };
}

/** The attribute filter the service's pipeline asks the decoder for. */
export function serviceDecodeOptions(): DecodeOptions {
  const { pipeline, store } = createPersistedPipeline(':memory:');
  store.close();
  return pipeline.decodeOptions;
}
