import { readFile } from 'node:fs/promises';
import { defaultMapping, loadMapping, type Mapping } from '@keyscope/attempts';
import { KeyscopeError } from '@keyscope/errors';
import type { Consumer } from 'kafkajs';
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

/**
 * kafkajs restarts a crashed consumer by itself when the error is retriable; otherwise it stays
 * stopped, which for a keyscope role means doing nothing while looking alive. That becomes a
 * rejection of `failed`.
 */
export function consumerFailure(consumer: Consumer, role: string, logger: Logger): Promise<never> {
  const failed = new Promise<never>((_resolve, reject) => {
    consumer.on(consumer.events.CRASH, (event) => {
      const { error, restart } = event.payload;
      if (restart) {
        logger.error(`kafka ${role}: consumer restarting after ${error.name}: ${error.message}`);
        return;
      }
      reject(
        new KeyscopeError(KAFKA_CONSUMER_STOPPED, `kafka ${role}: consumer stopped: ${error.message}`, {
          cause: error,
        }),
      );
    });
  });
  // The CLI races it against signals; a role stopped by a test must not leave a floating rejection.
  failed.catch(() => {});
  return failed;
}

export async function readMappingFile(file: string): Promise<Mapping> {
  if (file === '') return defaultMapping();
  return loadMapping(await readFile(file, 'utf8'), file);
}

/** Commits after the state an offset covers is durable; a failed commit (rebalance) is redone by the next. */
export async function commitQuietly(
  consumer: Consumer,
  topic: string,
  partition: number,
  nextOffset: number,
): Promise<void> {
  try {
    await consumer.commitOffsets([{ topic, partition, offset: String(nextOffset) }]);
  } catch {
    // The group is rebalancing or this member lost the partition: whoever reads it next starts
    // from the last commit, and redelivered records are no-ops (deterministic ids, dedup).
  }
}
