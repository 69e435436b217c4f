import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { activity, server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyscopeStore } from '../src/index.ts';
import { connectionOf } from '../src/keyscope-store.ts';
import { PLACEMENT_USE_GRANULE_MILLIS } from '../src/placement-table.ts';
import { committedValue, onSecondConnection } from './second-connection.ts';

let dir: string;
let path: string;
let store: KeyscopeStore;

const HOUR_SECONDS = 3600;
const attempt = (key: string, node: string, hour: number) =>
  server({ key, node, store: node, at: hour * HOUR_SECONDS });
const append = (...attempts: ReturnType<typeof attempt>[]) =>
  store.transaction(() => {
    for (const a of attempts) store.attemptLog.append(a.key, a);
  });
const nodes = () =>
  onSecondConnection(path, (db) => db.prepare('SELECT node FROM placements ORDER BY id').pluck().all());
const purgeBeforeHour = (hour: number, maxRows = 100) =>
  store.purge({
    attemptsBeforeUnixMillis: TEST_EPOCH_UNIX_MILLIS + hour * HOUR_SECONDS * 1000,
    recordsBeforeUnixMillis: 0,
    maxRows,
  });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-placements-'));
  path = join(dir, 'keyscope.db');
  store = new KeyscopeStore({ path, attemptIndexBatchRows: 1 });
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('placements', () => {
  it('purges the placement of a node no stored row refers to any more, and keeps the others', () => {
    const onGone = attempt('k1', 'gone', 0);
    append(onGone, attempt('k2', 'kept', 0));
    append(attempt('k3', 'kept', 5));
    expect(nodes()).toEqual(['gone', 'kept']);

    // The first batch goes; the second, and so the placement of 'kept', stays.
    purgeBeforeHour(4);
    expect(nodes()).toEqual(['kept']);
    expect(store.attemptsOfKey('k3').map((a) => a.placement.node)).toEqual(['kept']);

    // The node comes back, through the very placement object it had: it gets a row again.
    const back = { ...attempt('k4', 'gone', 6), placement: onGone.placement };
    append(back);
    store.close();
    store = new KeyscopeStore({ path });
    expect(nodes()).toEqual(['kept', 'gone']);
    expect(store.attemptsOfKey('k4')).toEqual([back]);
  });

  it('keeps a placement while a batch refers to it, even one past the horizon that the purge left', () => {
    append(attempt('k1', 'a', 0));
    append(attempt('k2', 'b', 2));
    // Both batches are past the horizon, but the latest row is never purged (the next insert's id
    // follows it): the batch of hour 2 stays, and so does the placement it refers to.
    purgeBeforeHour(5);
    expect(store.attemptsOfKey('k2')).toHaveLength(1);
    expect(nodes()).toEqual(['b']);
    append(attempt('k3', 'c', 9));
    purgeBeforeHour(5);
    expect(store.attemptsOfKey('k2')).toEqual([]);
    expect(nodes()).toEqual(['c']);
  });

  it('keeps the placements of node activity until the chunk holding it is purged', () => {
    store.transaction(() => store.recordActivity(activity({ node: 'c', fromSecond: 0, toSecond: 1 })));
    store.transaction(() =>
      store.recordActivity(
        activity({ node: 'd', fromSecond: 3 * HOUR_SECONDS, toSecond: 3 * HOUR_SECONDS + 1 }),
      ),
    );
    // The purge folds the log into one chunk of hours 0 to 3, which stays while hour 3 is in the window.
    purgeBeforeHour(2);
    expect(nodes()).toEqual(['c', 'd']);
    expect(store.recentActivity(4 * HOUR_SECONDS * 1000).map((sample) => sample.placement.node)).toEqual([
      'c',
      'd',
    ]);
    purgeBeforeHour(5);
    expect(nodes()).toEqual([]);
  });

  it('writes a placement’s time of last use once per granule, not per transaction', () => {
    // Rows the store's own connection changed: the work its writes did.
    const changes = () => connectionOf(store).prepare('SELECT total_changes()').pluck().get() as number;
    append(attempt('k1', 'a', 0));
    const lastMs = () => committedValue(path, 'SELECT last_ms FROM placements') as number;
    const first = lastMs();
    const before = changes();
    append(attempt('k2', 'a', 0.5));
    // The batch, its index entry and the index's progress (indexed every attempt here); the
    // placement's row untouched.
    expect(changes() - before).toBe(3);
    expect(lastMs()).toBe(first);
    append(attempt('k3', 'a', 2));
    expect(lastMs()).toBeGreaterThan(first + PLACEMENT_USE_GRANULE_MILLIS);
  });

  it('rolls back with a failed transaction a time of last use it wrote', () => {
    append(attempt('k1', 'a', 0));
    expect(() =>
      store.transaction(() => {
        store.attemptLog.append('k2', attempt('k2', 'a', 3));
        // A nested transaction writes what the outer one appended first: the batch, stamped.
        store.transaction(() => {});
        throw new Error('the detector failed');
      }),
    ).toThrow('the detector failed');
    // Had the store kept hour 3 in memory, it would not write it again below: the row would say
    // hour 0 while a batch of hour 3 refers to it, and the purge would take it.
    append(attempt('k3', 'a', 3));
    purgeBeforeHour(3);
    expect(store.attemptsOfKey('k1')).toEqual([]);
    expect(nodes()).toEqual(['a']);
    expect(store.attemptsOfKey('k3')).toHaveLength(1);
  });
});
