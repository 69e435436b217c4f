import { TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import type { KeyscopeStore } from '../src/index.ts';

/** Purges attempts and node activity from before the test epoch + `second`, keeping every record; how many went. */
export function purgeBefore(store: KeyscopeStore, second: number): number {
  return store.purge({
    attemptsBeforeUnixMillis: TEST_EPOCH_UNIX_MILLIS + second * 1000,
    recordsBeforeUnixMillis: 0,
    maxRows: 100,
  });
}
