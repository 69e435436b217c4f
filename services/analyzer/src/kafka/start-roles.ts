import { KeyscopeError } from '@keyscope/errors';
import { AuthFailures } from '../auth/auth-failures.ts';
import type { ServeConfig } from '../config.ts';
import { ANALYZER_CONFIG_INVALID } from '../errors.ts';
import type { ListenAddress } from '../listen-address.ts';
import { consoleLogger, type Logger, REPEAT_WINDOW_MILLIS, rateLimitedLogger } from '../logger.ts';
import { createMetrics, type MetricSources } from '../metrics.ts';
import { startSelfTelemetry } from '../self-telemetry.ts';
import { type RunningService, startServe } from '../serve.ts';
import { type RunningDetect, startDetectRole } from './detect-role.ts';
import { type RunningIngest, startIngestRole } from './ingest-role.ts';
import { createKafkaMetrics, KafkaCounters } from './kafka-counters.ts';
import { startRoleHttp } from './role-http.ts';
import type { RunningRole } from './running-role.ts';
import { type RunningServeRole, startServeRole } from './serve-role.ts';

/** What `keyscope serve` runs: the embedded service, or one or all roles of the scaled mode. */
export interface RunningRoles extends RunningRole {
  readonly addresses: {
    readonly api: ListenAddress;
    readonly otlpHttp?: ListenAddress;
    readonly otlpGrpc?: ListenAddress;
  };
  /** Set in the embedded mode. */
  readonly embedded?: RunningService;
  readonly detect?: RunningDetect;
  readonly ingest?: RunningIngest;
  readonly serve?: RunningServeRole;
  readonly counters?: KafkaCounters;
}

/**
 * Starts what `role` and `kafka.brokers` ask for. `all` without brokers is `startServe`, the
 * embedded service, untouched; with brokers it is the three roles in one process, talking
 * through Kafka exactly as separate processes would.
 */
export async function startRoles(
  config: ServeConfig,
  dependencies: { logger?: Logger; now?: () => number } = {},
): Promise<RunningRoles> {
  const role = config.role;
  if (config.kafka.brokers.length === 0) {
    if (role !== 'all') {
      throw new KeyscopeError(
        ANALYZER_CONFIG_INVALID,
        `role is ${role} but kafka.brokers is empty: the ${role} role talks to the other roles through Kafka (set kafka.brokers or KEYSCOPE_KAFKA_BROKERS)`,
      );
    }
    const embedded = await startServe(config, dependencies);
    return {
      addresses: embedded.addresses,
      embedded,
      failed: new Promise<never>(() => {}),
      stop: () => embedded.stop(),
    };
  }

  // As in the embedded service (startServe): a broker or disk that fails every batch the same way
  // writes one line a minute with its count, not one a batch.
  const logger = rateLimitedLogger(dependencies.logger ?? consoleLogger);
  const flushLog = setInterval(() => logger.flush(), REPEAT_WINDOW_MILLIS);
  flushLog.unref();
  const counters = new KafkaCounters();
  const kafkaMetrics = createKafkaMetrics(counters);
  const started: RunningRole[] = [
    {
      stop: async () => {
        clearInterval(flushLog);
        logger.close();
      },
      failed: new Promise<never>(() => {}),
    },
  ];
  const stopAll = async () => {
    for (const part of started.reverse()) await part.stop();
  };
  try {
    // keyscope's own traces (telemetry.otlpEndpoint), as in the embedded service.
    const telemetry = await startSelfTelemetry(config, logger);
    started.push({ stop: () => telemetry.stop(), failed: new Promise<never>(() => {}) });
    let detect: RunningDetect | undefined;
    let ingest: RunningIngest | undefined;
    let serve: RunningServeRole | undefined;
    if (role === 'detect' || role === 'all') {
      detect = await startDetectRole(config, { logger, counters, now: dependencies.now });
      started.push(detect);
    }
    if (role === 'ingest' || role === 'all') {
      ingest = await startIngestRole(config, { logger, counters, now: dependencies.now });
      started.push(ingest);
    }
    const receivers = ingest?.receivers;
    const metricSources: MetricSources = {
      ...(receivers === undefined
        ? {}
        : {
            ingest: () => receivers.counters.snapshot(),
            queue: () => receivers.inFlight(),
            buffered: () => receivers.bufferedBytes(),
            archive: () => receivers.archiveCounts(),
          }),
      ...(detect === undefined ? {} : { detector: detect.detectorStats }),
    };
    let api: ListenAddress;
    if (role === 'serve' || role === 'all') {
      serve = await startServeRole(config, {
        logger,
        counters,
        metricSources,
        kafkaMetrics: kafkaMetrics.render,
        now: dependencies.now,
      });
      started.push(serve);
      api = serve.api;
    } else {
      let ready = false;
      const authFailures = new AuthFailures({ budget: config.api.authFailureBudget });
      const metrics = createMetrics({ ...metricSources, authFailures: () => authFailures.snapshot() });
      const http = await startRoleHttp(config, {
        logger,
        authFailures,
        ready: () => ready,
        metrics: async () => `${await metrics.render()}${await kafkaMetrics.render()}`,
      });
      started.push({ stop: http.close, failed: new Promise<never>(() => {}) });
      api = http.address;
      ready = true;
    }
    const failed = Promise.race(started.map((part) => part.failed));
    failed.catch(() => {});
    let stopping: Promise<void> | undefined;
    return {
      addresses: { api, otlpHttp: ingest?.addresses.otlpHttp, otlpGrpc: ingest?.addresses.otlpGrpc },
      detect,
      ingest,
      serve,
      counters,
      failed,
      stop() {
        stopping ??= stopAll();
        return stopping;
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
