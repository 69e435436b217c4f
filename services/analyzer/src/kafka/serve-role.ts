import { randomUUID } from 'node:crypto';
import type { Alerter } from '@keyscope/alerts';
import { KeyscopeStore } from '@keyscope/store';
import type { Consumer, EachBatchPayload } from 'kafkajs';
import { startApiWithAlerts } from '../api-with-alerts.ts';
import { AuthFailures } from '../auth/auth-failures.ts';
import type { ServeConfig } from '../config.ts';
import type { ListenAddress } from '../listen-address.ts';
import type { Logger } from '../logger.ts';
import { createMetrics, type MetricSources } from '../metrics.ts';
import { detectorConfigOf } from '../pipeline/detector-settings.ts';
import { ReplayHeaderLog } from '../pipeline/replay-header-log.ts';
import { ShutdownStack } from '../shutdown-stack.ts';
import { DeadLetters, unreadableRecord } from './dead-letters.ts';
import { decodeIncidentRecord, type IncidentRecord } from './incident-records.ts';
import { IncidentsMaterializer } from './incidents-materializer.ts';
import { createConsumer, createKafkaClient } from './kafka-client.ts';
import type { KafkaCounters } from './kafka-counters.ts';
import { PartitionBackoff } from './partition-backoff.ts';
import { type RunningRole, readMappingFile, runConsumer } from './running-role.ts';
import { ensureTopics, topicSpecs } from './topics.ts';

const PURGE_MILLIS = 10_000;

export interface RunningServeRole extends RunningRole {
  readonly api: ListenAddress;
  readonly store: KeyscopeStore;
}

/**
 * The serve role: the API, the web page and the alerter over a SQLite copy of the incidents
 * topic. Every serve instance reads the whole topic (a consumer group of its own, never
 * committed: its offsets live in its database), so replicas answer alike; alerts should be
 * configured on one of them only, since each pages from its own outbox.
 */
export async function startServeRole(
  config: ServeConfig,
  dependencies: {
    logger: Logger;
    counters: KafkaCounters;
    /** Sources of other roles in this process (the ingest role's receivers), for one /metrics. */
    metricSources?: MetricSources;
    /** Prometheus text appended to /metrics: the Kafka counters of every role in this process. */
    kafkaMetrics: () => Promise<string>;
    now?: () => number;
  },
): Promise<RunningServeRole> {
  const { logger, counters } = dependencies;
  const now = dependencies.now ?? Date.now;
  const kafkaConfig = config.kafka;
  const topic = kafkaConfig.incidents.topic;
  const mapping = await readMappingFile(config.mapping.file);
  const detectorConfig = detectorConfigOf(config.detector, mapping);
  const kafka = createKafkaClient(kafkaConfig, 'serve', logger);
  await ensureTopics(kafka, topicSpecs(config, ['incidents', 'deadLetter']), kafkaConfig, logger);

  const stops = new ShutdownStack();
  try {
    const store = new KeyscopeStore({ path: config.db.path, integrityCheck: config.db.integrityCheck });
    stops.push(() => store.close());
    let alerter: Alerter | undefined;
    const materializer = new IncidentsMaterializer({
      store,
      detectorConfig,
      replayHeaderLog: new ReplayHeaderLog(logger, detectorConfig.replayHeaderMinRepeats),
      alerts: () =>
        alerter === undefined
          ? undefined
          : {
              incidentsChanged: (incidents) => alerter!.incidentsChanged(incidents),
              incidentsRetracted: (ids) => alerter!.incidentsRetracted(ids),
            },
    });

    let ready = false;
    const authFailures = new AuthFailures({ budget: config.api.authFailureBudget });
    const metrics = createMetrics({
      ...dependencies.metricSources,
      authFailures: () => authFailures.snapshot(),
      scopes: () => materializer.scopeView.scopeReport(),
      openIncidents: () => store.incidents.openCount(),
      alerts: () => alerter?.snapshot() ?? {},
      pendingAlerts: () => store.outbox.pending(),
    });
    const served = await startApiWithAlerts({
      config,
      store,
      detector: () => materializer.scopeView,
      metrics: async () => `${await metrics.render()}${await dependencies.kafkaMetrics()}`,
      authFailures,
      ready: () => ready,
      now,
      logger,
    });
    stops.push(() => served.stop());
    alerter = served.alerter;
    const apiListen = served.address;

    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    stops.push(() => producer.disconnect());
    // Its own group: every serve instance must read every partition.
    const consumer: Consumer = createConsumer(
      kafka,
      kafkaConfig,
      `${kafkaConfig.clientId}-serve-${randomUUID()}`,
    );
    const backoff = new PartitionBackoff(consumer, topic, counters, logger, 'serve');
    const deadLetters = new DeadLetters({
      producer,
      topic: kafkaConfig.deadLetter.topic,
      counters,
      logger,
      role: 'serve',
    });
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      for (const partition of event.payload.memberAssignment[topic] ?? []) {
        const next = materializer.nextOffset(topic, partition);
        if (next !== undefined) consumer.seek({ topic, partition, offset: String(next) });
      }
    });
    const eachBatch = async ({ batch, resolveOffset, isRunning, isStale }: EachBatchPayload) => {
      const partition = batch.partition;
      if (!isRunning() || isStale() || backoff.waiting(partition)) return;
      try {
        const next = materializer.nextOffset(topic, partition) ?? 0;
        const records: IncidentRecord[] = [];
        for (const message of batch.messages) {
          if (Number(message.offset) < next) continue;
          counters.count(counters.consumed, topic);
          try {
            records.push(decodeIncidentRecord(message.key, message.value));
          } catch (error) {
            await deadLetters.record(unreadableRecord(topic, partition, message), error);
          }
        }
        const last = Number(batch.lastOffset());
        if (last >= next) materializer.apply(topic, partition, records, last);
        resolveOffset(batch.lastOffset());
        backoff.succeeded(partition);
      } catch (error) {
        backoff.failed(partition, error);
      }
    };
    await consumer.connect();
    stops.push(() => consumer.disconnect());
    await consumer.subscribe({ topic, fromBeginning: true });
    const running = await runConsumer(
      consumer,
      { autoCommit: false, eachBatchAutoResolve: false, eachBatch },
      { role: 'serve', logger },
    );
    stops.push(async () => {
      backoff.stop();
      await running.stop();
    });
    logger.info(`serve materializing ${topic} into ${config.db.path}`);

    const retentionMillis = config.retention.findingsDays * 24 * 60 * 60 * 1000;
    const purge = setInterval(() => {
      try {
        const at = now();
        store.purge({
          attemptsBeforeUnixMillis: at - retentionMillis,
          recordsBeforeUnixMillis: at - retentionMillis,
          maxRows: 5_000,
        });
      } catch (error) {
        logger.error(`retention failed: ${(error as Error).message}`);
      }
    }, PURGE_MILLIS);
    purge.unref();
    stops.push(() => clearInterval(purge));
    ready = true;

    return {
      api: apiListen,
      store,
      failed: running.failed,
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
