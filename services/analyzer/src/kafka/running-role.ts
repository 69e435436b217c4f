import { KeyscopeError } from '@keyscope/errors';
import type { Consumer, ConsumerRunConfig } from 'kafkajs';
import type { Logger } from '../logger.ts';
import { KAFKA_CONSUMER_STOPPED } from './kafka-errors.ts';

/** One started role (or several in one process, for `all`). */
export interface RunningRole {
  /** Stops consumers (finishing the batch in hand), timers, listeners, stores, in that order. Idempotent. */
  stop(): Promise<void>;
  /**
   * Rejects with KS_KAFKA_CONSUMER_STOPPED if a consumer stops for good, so that the process exits
   * and its supervisor restarts it; never resolves.
   */
  readonly failed: Promise<never>;
}

/** Restarts allowed within `RESTART_WINDOW_MILLIS` before a role gives up and exits. */
const MAX_RESTARTS = 10;
const RESTART_WINDOW_MILLIS = 5 * 60 * 1000;
const RESTART_DELAY_MILLIS = 1_000;

/**
 * Runs a consumer and keeps it running. kafkajs restarts a crashed consumer by itself only after
 * a retriable error; after any other it stays stopped, which for a keyscope role means doing
 * nothing while looking alive. Such a crash is often one exchange gone wrong (a broker answering
 * SyncGroup with an error during a rebalance), so the consumer is started again — a rebalance the
 * roles are built to take. It is given up, rejecting `failed` with KS_KAFKA_CONSUMER_STOPPED,
 * when the error is one a restart cannot cure (a compression codec kafkajs lacks) or when restarts
 * keep coming: the process then exits and its supervisor decides.
 */
export async function runConsumer(
  consumer: Consumer,
  config: ConsumerRunConfig,
  context: { role: string; logger: Logger },
): Promise<{ failed: Promise<never>; stop: () => Promise<void> }> {
  const { role, logger } = context;
  const restarts: number[] = [];
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let fail: (error: KeyscopeError) => void = () => {};
  const failed = new Promise<never>((_resolve, reject) => {
    fail = reject;
  });
  // The CLI races it against signals; a role stopped by a test must not leave a floating rejection.
  failed.catch(() => {});
  consumer.on(consumer.events.CRASH, (event) => {
    const { error, restart } = event.payload;
    if (stopping) return;
    if (restart) {
      logger.error(`kafka ${role}: consumer restarting after ${error.name}: ${error.message}`);
      return;
    }
    const now = Date.now();
    while (restarts.length > 0 && restarts[0]! < now - RESTART_WINDOW_MILLIS) restarts.shift();
    if (isIncurable(error) || restarts.length >= MAX_RESTARTS) {
      fail(
        new KeyscopeError(KAFKA_CONSUMER_STOPPED, `kafka ${role}: consumer stopped: ${error.message}`, {
          cause: error,
        }),
      );
      return;
    }
    restarts.push(now);
    logger.error(`kafka ${role}: consumer stopped by ${error.name} (${error.message}); starting it again`);
    timer = setTimeout(() => {
      if (stopping) return;
      consumer
        .connect()
        .then(() => consumer.run(config))
        .catch((cause: Error) =>
          fail(
            new KeyscopeError(
              KAFKA_CONSUMER_STOPPED,
              `kafka ${role}: consumer cannot restart: ${cause.message}`,
              {
                cause,
              },
            ),
          ),
        );
    }, RESTART_DELAY_MILLIS);
    timer.unref();
  });
  await consumer.run(config);
  return {
    failed,
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await consumer.disconnect();
    },
  };
}

function isIncurable(error: Error): boolean {
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause.name === 'KafkaJSNotImplemented') return true;
  }
  return false;
}

export { readMappingFile } from '../startup-errors.ts';
