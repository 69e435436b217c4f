import { type Consumer, Kafka, type LogEntry, logLevel } from 'kafkajs';
import type { KafkaConfig } from '../config.ts';
import type { Logger } from '../logger.ts';

/**
 * The kafkajs client of one role. kafkajs logs through the service's logger: errors only, since
 * its warnings repeat every retry of what keyscope itself reports once (a rebalance, a broker that
 * moved) and would drown the lines that matter.
 */
export function createKafkaClient(
  config: Pick<KafkaConfig, 'brokers' | 'clientId'>,
  role: string,
  logger: Logger,
): Kafka {
  return new Kafka({
    clientId: `${config.clientId}-${role}`,
    brokers: [...config.brokers],
    logLevel: logLevel.ERROR,
    logCreator: () => (entry: LogEntry) => {
      if (entry.level > logLevel.ERROR) return;
      const { message, ...rest } = entry.log;
      const detail = rest.error ?? rest.stack ?? '';
      logger.error(`kafka ${role}: ${message}${detail === '' ? '' : ` (${String(detail)})`}`);
    },
    retry: { initialRetryTime: 200, retries: 8, maxRetryTime: 10_000 },
    connectionTimeout: 5_000,
  });
}

/**
 * A consumer as every role uses it: never auto-creating topics (startup checked them), and
 * heartbeating often enough that `kafka.sessionTimeoutMillis` alone decides how fast a dead
 * member's partitions move.
 */
export function createConsumer(
  kafka: Kafka,
  config: Pick<KafkaConfig, 'sessionTimeoutMillis'>,
  groupId: string,
): Consumer {
  const sessionTimeout = config.sessionTimeoutMillis;
  return kafka.consumer({
    groupId,
    allowAutoTopicCreation: false,
    sessionTimeout,
    // The broker refuses a rebalance timeout below the session timeout.
    rebalanceTimeout: Math.max(sessionTimeout, 10_000),
    heartbeatInterval: Math.max(100, Math.min(3_000, Math.floor(sessionTimeout / 3))),
    // How long a fetch waits on the broker for data. kafkajs's 5 s default also delays the first
    // read after a partition is resumed (the detect role pauses new partitions while it finds
    // where to resume) and every stop; half a second costs a few idle fetches instead.
    maxWaitTimeInMs: 500,
  });
}
