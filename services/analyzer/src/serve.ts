import type { Alerter } from '@keyscope/alerts';
import { KeyscopeStore } from '@keyscope/store';
import { startApiWithAlerts } from './api-with-alerts.ts';
import { AuthFailures } from './auth/auth-failures.ts';
import { BackToBack } from './back-to-back.ts';
import type { ServeConfig } from './config.ts';
import type { ListenAddress } from './listen-address.ts';
import { consoleLogger, type Logger, REPEAT_WINDOW_MILLIS, rateLimitedLogger } from './logger.ts';
import { createMetrics } from './metrics.ts';
import { DetectionPipeline } from './pipeline/detection-pipeline.ts';
import { detectorConfigOf } from './pipeline/detector-settings.ts';
import { REGROUP_STEP_KEYS } from './pipeline/stored-detector.ts';
import type { IngestCountersSnapshot } from './receivers/ingest-counters.ts';
import { type RunningReceivers, startReceivers } from './receivers/start-receivers.ts';
import { startSelfTelemetry } from './self-telemetry.ts';
import { ShutdownStack } from './shutdown-stack.ts';
import { describeMapping, readMappingFile } from './startup-errors.ts';

export interface ServeDependencies {
  readonly logger?: Logger;
  /** Wall clock for ticks, acknowledgements and retention; tests move it. */
  readonly now?: () => number;
}

export interface RunningService {
  readonly addresses: {
    readonly api: ListenAddress;
    readonly otlpHttp: ListenAddress;
    readonly otlpGrpc: ListenAddress;
  };
  readonly pipeline: DetectionPipeline;
  readonly store: KeyscopeStore;
  /**
   * What the receivers counted: payloads and spans accepted and rejected, by transport. Every
   * span of an accepted payload counts, also those the pipeline never reads and so is not given.
   */
  ingestCounts(): IngestCountersSnapshot;
  /** Stops in reverse order of start: receivers (drained), timers, API, alerter, store. Idempotent. */
  stop(): Promise<void>;
}

const TICK_MILLIS = 1_000;
const PURGE_MILLIS = 10_000;
const PURGE_CHUNK_ROWS = 5_000;
/**
 * How often the size bound is checked (three pragmas), and the rows it purges at a time: ~25 ms
 * of deleting here. Past the bound, one purge follows the other with the event loop's other work
 * in between until the database is back under its target; purging an attempt costs a fraction of
 * ingesting it (~200,000 a second of one core here, against ~80,000 ingested at most), so the
 * bound keeps up with any spike.
 */
const SIZE_BOUND_MILLIS = 1_000;
const SIZE_BOUND_ROWS = 5_000;
/** While writes fail, how often a probe write checks whether the storage takes them again. */
const WRITE_PROBE_MILLIS = 5_000;

/**
 * The embedded service: OTLP receivers → attempts → detector → SQLite, the HTTP API and web page,
 * the alert outbox, /metrics. Logs one `… listening on …` line per listener, and any line that
 * repeats at most once a minute, with its count (`rateLimitedLogger`).
 *
 * A damaged database stops startup (KS_STORE_CORRUPT, `db.integrityCheck`). While database
 * writes fail, /readyz answers 503 with the reason; the first write that succeeds (a request's,
 * or a probe's every few seconds) makes it 200 again. Past `db.maxBytes` the oldest rows are purged (packages/store/src/size-bound.ts).
 */
export async function startServe(
  config: ServeConfig,
  dependencies: ServeDependencies = {},
): Promise<RunningService> {
  const logger = rateLimitedLogger(dependencies.logger ?? consoleLogger);
  const now = dependencies.now ?? Date.now;
  const mapping = await readMappingFile(config.mapping.file);
  logger.info(describeMapping(config.mapping.file, mapping));
  const detectorConfig = detectorConfigOf(config.detector, mapping);

  const stops = new ShutdownStack();
  // Pushed first, so run last: the counts of lines held back by everything stopped before.
  stops.push(() => logger.close());
  try {
    const telemetry = await startSelfTelemetry(config, logger);
    stops.push(() => telemetry.stop());

    // The pipeline commits under load: WAL checkpoints go to a worker thread, off the event loop.
    const store = new KeyscopeStore({
      path: config.db.path,
      backgroundCheckpoints: true,
      integrityCheck: config.db.integrityCheck,
    });
    stops.push(() => store.close());
    // Started before the first request rather than during it: the thread's start is tens of
    // milliseconds of CPU that the first requests would otherwise share a core with. An in-memory
    // database has no WAL file to checkpoint, and so no thread.
    if (!(await store.backgroundCheckpointsStarted) && store.checkpointsInBackground) {
      logger.error(
        `the WAL checkpoint thread did not start on ${config.db.path} (it failed, or could not open the file): commits checkpoint on their own, and stall while they do`,
      );
    }

    let alerter: Alerter | undefined;
    const pipeline = new DetectionPipeline({
      mapping,
      detectorConfig,
      store,
      logger,
      now,
      spans: config.spans,
      alerts: {
        incidentsChanged: (incidents) => alerter?.incidentsChanged(incidents) ?? 0,
        incidentsRetracted: (ids) => alerter?.incidentsRetracted(ids) ?? 0,
      },
    });

    let receivers: RunningReceivers | undefined;
    let ready = false;
    const notReadyReason = (): string | undefined => {
      if (!ready) return 'starting or stopping';
      const failure = store.writeFailure;
      if (failure === undefined) return undefined;
      return `database ${config.db.path} cannot be written: ${failure.message} (${failure.code}); ${failure.failures} transactions failed since the last that wrote`;
    };
    const purgedRows = { retention: 0, size: 0 };
    const authFailures = new AuthFailures({ budget: config.api.authFailureBudget });
    const metrics = createMetrics({
      ingest: () => receivers?.counters.snapshot(),
      queue: () => receivers?.inFlight() ?? { requests: 0, spans: 0 },
      buffered: () => receivers?.bufferedBytes() ?? { http: 0, grpc: 0 },
      pipeline: () => pipeline.counts(),
      detector: () => pipeline.detector.stats(),
      scopes: () => pipeline.detector.scopeReport(),
      openIncidents: () => store.incidents.openCount(),
      alerts: () => alerter?.snapshot() ?? {},
      pendingAlerts: () => store.outbox.pending(),
      db: () => ({
        bytes: store.usedBytes(),
        maxBytes: config.db.maxBytes,
        writable: store.writeFailure === undefined,
        purgedRows: { ...purgedRows },
      }),
      authFailures: () => authFailures.snapshot(),
      archive: () => receivers?.archiveCounts(),
    });

    const served = await startApiWithAlerts({
      config,
      store,
      detector: () => pipeline.detector,
      metrics: metrics.render,
      authFailures,
      ready: () => notReadyReason() === undefined,
      notReadyReason,
      now,
      logger,
    });
    stops.push(() => served.stop());
    alerter = served.alerter;
    const apiListen = served.address;

    receivers = await startReceivers(config, {
      consumer: pipeline,
      decodeOptions: pipeline.decodeOptions,
      logger,
    });
    stops.push(() => receivers!.stop());

    // A changed routing event judges again every key of its incidents: a step of keys per turn of
    // the event loop, each in a transaction of its own, so requests are answered in between.
    const regrouping = new BackToBack(() => {
      let more = false;
      safely(logger, 'tick', () => {
        more = pipeline.judgeRegrouped(REGROUP_STEP_KEYS);
      });
      return more;
    });
    const tick = setInterval(() => {
      safely(logger, 'tick', () => pipeline.tick(now(), { maxRegroupedKeys: 0 }));
      setImmediate(() => regrouping.start());
    }, TICK_MILLIS);
    const retentionMillis = config.retention.findingsDays * 24 * 60 * 60 * 1000;
    // Retention purges a chunk at a time, back to back while a chunk comes out full: a backlog (a
    // service that was down, a busy hour's history passing the horizon) goes at the store's pace,
    // not one chunk per interval.
    const retention = new BackToBack(() => {
      let full = false;
      safely(logger, 'retention', () => {
        const at = now();
        const removed = store.purge({
          attemptsBeforeUnixMillis: at - config.detector.retryHorizonMillis,
          recordsBeforeUnixMillis: at - retentionMillis,
          maxRows: PURGE_CHUNK_ROWS,
        });
        purgedRows.retention += removed;
        full = removed >= PURGE_CHUNK_ROWS;
      });
      return full;
    });
    const purge = setInterval(() => retention.start(), PURGE_MILLIS);
    // Past the bound, one purge follows the other until the database is back under its target.
    const sizeBound = new BackToBack((resume) => {
      let more = false;
      safely(logger, 'size bound', () => {
        more = boundSize(store, config, logger, purgedRows, resume);
      });
      return more;
    });
    const sizeCheck = setInterval(() => sizeBound.start(), SIZE_BOUND_MILLIS);
    // Without it, a service whose readiness took it out of a load balancer would get no request
    // to try a write with, and stay out once the disk has room again.
    const probe = setInterval(() => {
      if (store.writeFailure !== undefined) safely(logger, 'write probe', () => store.probeWrite());
    }, WRITE_PROBE_MILLIS);
    const flushLog = setInterval(() => logger.flush(), REPEAT_WINDOW_MILLIS);
    const timers = [tick, purge, sizeCheck, probe, flushLog];
    for (const timer of timers) timer.unref();
    stops.push(() => {
      regrouping.stop();
      retention.stop();
      sizeBound.stop();
      for (const timer of timers) clearInterval(timer);
      // What the drained requests changed, regrouped and resolved once more before closing.
      safely(logger, 'tick', () => pipeline.tick(now()));
    });
    ready = true;

    return {
      addresses: {
        api: apiListen,
        otlpHttp: receivers.addresses.otlpHttp,
        otlpGrpc: receivers.addresses.otlpGrpc,
      },
      pipeline,
      store,
      ingestCounts: () => receivers!.counters.snapshot(),
      stop() {
        ready = false;
        return stops.stop();
      },
    };
  } catch (error) {
    await stops.stop();
    throw error;
  }
}

/**
 * One purge of the oldest rows while the database is past `db.maxBytes`; true when there is more
 * to purge. Its log lines carry no counts, so that the logger folds their repeats into one.
 */
function boundSize(
  store: KeyscopeStore,
  config: ServeConfig,
  logger: Logger,
  purgedRows: { size: number },
  resume: boolean,
): boolean {
  const purge = store.purgeToSize({ maxBytes: config.db.maxBytes, maxRows: SIZE_BOUND_ROWS, resume });
  const rows =
    purge.attempts + purge.activity + purge.incidents + purge.findings + purge.alerts + purge.routingEvents;
  purgedRows.size += rows;
  if (purge.exhausted) {
    logger.error(
      `db: ${config.db.path} is past db.maxBytes (${config.db.maxBytes} bytes) with nothing left to purge but open incidents, their findings and undelivered alerts; writes go on until the disk refuses them`,
    );
  } else if (rows > 0) {
    logger.info(
      `db: ${config.db.path} is past db.maxBytes (${config.db.maxBytes} bytes): purging the oldest rows (keyscope_db_purged_rows_total{reason="size"})`,
    );
  }
  return purge.more;
}

function safely(logger: Logger, what: string, work: () => void): void {
  try {
    work();
  } catch (error) {
    logger.error(`${what} failed: ${(error as Error).message}`);
  }
}
