import type { DecodeOptions, SpanConsumer } from '@keyscope/otlp';
import type { ServeConfig } from '../config.ts';
import { formatHostPort, type ListenAddress, type Receiver } from '../listen-address.ts';
import { consoleLogger, type Logger } from '../logger.ts';
import { CountingConsumer } from '../pipeline/counting-consumer.ts';
import { type ListenerName, listenFailure } from '../startup-errors.ts';
import { Admission } from './admission.ts';
import { Ingest } from './ingest.ts';
import { IngestCounters, type Transport } from './ingest-counters.ts';
import { startOtlpGrpcReceiver } from './otlp-grpc.ts';
import { startOtlpHttpReceiver } from './otlp-http.ts';
import { type ArchiveCounts, PayloadArchive } from './payload-archive.ts';

export interface ReceiverDependencies {
  /** Where decoded spans go; a span-counting consumer when absent. */
  readonly consumer?: SpanConsumer;
  readonly logger?: Logger;
  /** Passed to the decoders, typically the consumer's own (`DetectionPipeline.decodeOptions`). */
  readonly decodeOptions?: DecodeOptions;
}

export interface RunningReceivers {
  /** The bound addresses: port 0 in the config is resolved here. */
  readonly addresses: { readonly otlpHttp: ListenAddress; readonly otlpGrpc: ListenAddress };
  readonly counters: IngestCounters;
  /** What the payload archive wrote and lost; undefined while `archive.path` is ''. */
  archiveCounts(): ArchiveCounts | undefined;
  /** Requests and spans the receivers have admitted and the consumer has not yet acknowledged. */
  inFlight(): { requests: number; spans: number };
  /** Bytes of bodies and messages still arriving, per transport (buffered-bodies.ts). */
  bufferedBytes(): Record<Transport, number>;
  /**
   * Stops the receivers (no new requests; those in flight are answered, for up to
   * `shutdown.drainTimeoutMillis`), then the archive, once it has written what they acknowledged
   * (for up to `shutdown.drainTimeoutMillis` more).
   * Idempotent.
   */
  stop(): Promise<void>;
}

/**
 * The OTLP receivers, in-process: receivers → consumer. Logs one line per listener once it is
 * bound. If a listener cannot start, those already started are stopped and the error is thrown.
 */
export async function startReceivers(
  config: ServeConfig,
  dependencies: ReceiverDependencies = {},
): Promise<RunningReceivers> {
  const logger = dependencies.logger ?? consoleLogger;
  const consumer = dependencies.consumer ?? new CountingConsumer();
  const counters = new IngestCounters();
  const admission = new Admission(config.otlp.admission);
  const archive = config.archive.path === '' ? undefined : await PayloadArchive.start(config.archive, logger);
  const ingest = new Ingest({
    consumer,
    admission,
    counters,
    logger,
    decodeOptions: dependencies.decodeOptions,
    archive,
  });

  const started: Receiver[] = [];
  const stopAll = async (drainTimeoutMillis: number) => {
    await Promise.all(started.map((r) => r.stop(drainTimeoutMillis)));
    await archive?.stop(drainTimeoutMillis);
  };
  try {
    const http = await listening(
      'otlp-http',
      config.otlp.http,
      startOtlpHttpReceiver({
        ...config.otlp.http,
        retryAfterSeconds: config.otlp.admission.retryAfterSeconds,
        ingest,
        logger,
      }),
    );
    started.push(http);
    logger.info(`otlp-http listening on http://${formatHostPort(http.address)}`);

    const grpc = await listening(
      'otlp-grpc',
      config.otlp.grpc,
      startOtlpGrpcReceiver({ ...config.otlp.grpc, ingest, logger }),
    );
    started.push(grpc);
    logger.info(`otlp-grpc listening on ${formatHostPort(grpc.address)}`);
    if (archive !== undefined) logger.info(`archiving acknowledged OTLP payloads to ${config.archive.path}`);

    let stopping: Promise<void> | undefined;
    return {
      addresses: { otlpHttp: http.address, otlpGrpc: grpc.address },
      counters,
      archiveCounts: () => archive?.counts(),
      inFlight: () => admission.inFlight(),
      bufferedBytes: () => ({ http: http.bufferedBytes(), grpc: grpc.bufferedBytes() }),
      stop() {
        stopping ??= stopAll(config.shutdown.drainTimeoutMillis).then(() => undefined);
        return stopping;
      },
    };
  } catch (error) {
    await stopAll(0);
    throw error;
  }
}

async function listening(
  name: ListenerName,
  address: ListenAddress,
  starting: Promise<Receiver>,
): Promise<Receiver> {
  try {
    return await starting;
  } catch (error) {
    throw listenFailure(name, address, error);
  }
}
