import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Attempt } from '@keyscope/attempts';
import { createDetector, type Detector } from '@keyscope/detector';
import { server } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyscopeStore, type SizePurge, TARGET_FRACTION } from '../src/index.ts';

const HOUR = 3600;

let dir: string;
let store: KeyscopeStore;
let detector: Detector;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-size-'));
  store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
  detector = createDetector(undefined, { attemptLog: store.attemptLog });
});

afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One transaction: `count` keys executed once at second `at`, named `${name}-0`…, plus `extra`. */
function ingest(name: string, at: number, count: number, extra: Attempt[] = []): void {
  const attempts = [...extra];
  for (let i = 0; i < count; i++) attempts.push(server({ key: `${name}-${i}`, node: 'a', store: 'A', at }));
  store.transaction(() =>
    store.applyChanges(
      detector.ingest({ attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } }),
    ),
  );
}

/** A key executed in two node stores at second `at`: a finding, in the incident of that hour. */
function twice(key: string, at: number): Attempt[] {
  return [server({ key, node: 'a', store: 'A', at }), server({ key, node: 'b', store: 'B', at: at + 1 })];
}

/** Writes the key index of the attempts appended so far, which a purge does before anything else. */
function indexAttempts(): void {
  store.purge({ attemptsBeforeUnixMillis: 0, recordsBeforeUnixMillis: 0, maxRows: 1 });
}

const stored = (key: string) => store.attemptLog.attemptsOf(key).length > 0;
const incidentOf = (key: string) => store.findings.ofKey(key)[0]?.incidentId;

describe('the size bound', () => {
  it('purges nothing while the database is under it', () => {
    ingest('k', 0, 100);
    const purge = store.purgeToSize({ maxBytes: store.usedBytes() + 1, maxRows: 10_000 });
    expect(purge).toMatchObject({ attempts: 0, incidents: 0, findings: 0, exhausted: false });
    expect(stored('k-0')).toBe(true);
  });

  it('brings a database over the bound back under its target by purging the oldest attempts', () => {
    for (let batch = 0; batch < 30; batch++) ingest(`b${batch}`, batch * 6 * 60, 300);
    const before = store.usedBytes();
    const maxBytes = Math.floor(before * 0.6);
    const purge = store.purgeToSize({ maxBytes, maxRows: 1_000_000 });
    expect(purge.bytesBefore).toBe(before);
    expect(purge.bytesAfter).toBe(store.usedBytes());
    expect(purge.bytesAfter).toBeLessThanOrEqual(maxBytes * TARGET_FRACTION);
    expect(purge.exhausted).toBe(false);
    // Oldest first: a prefix of the batches went, the rest is whole.
    const kept = Array.from({ length: 30 }, (_, batch) => stored(`b${batch}-0`));
    const firstKept = kept.indexOf(true);
    expect(firstKept).toBeGreaterThan(0);
    expect(kept.slice(firstKept).every(Boolean)).toBe(true);
    expect(purge.attempts).toBe(firstKept * 300);
  });

  it('purges in calls of a few rows each, going on down to the target when resumed', () => {
    for (let batch = 0; batch < 30; batch++) ingest(`b${batch}`, batch * 6 * 60, 300);
    indexAttempts();
    const maxBytes = Math.floor(store.usedBytes() * 0.99);
    let purge = store.purgeToSize({ maxBytes, maxRows: 300 });
    expect(purge).toMatchObject({ attempts: 300, more: true, exhausted: false });
    // Under the bound but above its target: a fresh check leaves it there, a resumed one goes on.
    expect(purge.bytesAfter).toBeLessThanOrEqual(maxBytes);
    expect(purge.bytesAfter).toBeGreaterThan(maxBytes * TARGET_FRACTION);
    expect(store.purgeToSize({ maxBytes, maxRows: 300 }).attempts).toBe(0);
    let calls = 1;
    while (purge.more && calls < 100) {
      purge = store.purgeToSize({ maxBytes, maxRows: 300, resume: true });
      calls++;
    }
    expect(purge.more).toBe(false);
    expect(purge.bytesAfter).toBeLessThanOrEqual(maxBytes * TARGET_FRACTION);
    expect(calls).toBeGreaterThan(2);
  });

  it('purges old attempts, then resolved incidents oldest first, then the newest hour, never an open incident', () => {
    ingest('h0', 0, 200, twice('dup-0', 10));
    ingest('h1', HOUR, 200, twice('dup-1', HOUR + 10));
    ingest('h2', 2 * HOUR, 200, twice('dup-2', 2 * HOUR + 10));
    ingest('h4', 4 * HOUR + 1800, 200);
    ingest('h5', 5 * HOUR, 200);
    const [resolvedFirst, resolvedSecond, open] = ['dup-0', 'dup-1', 'dup-2'].map((key) => incidentOf(key)!);
    expect(new Set([resolvedFirst, resolvedSecond, open]).size).toBe(3);
    store.incidents.resolve(resolvedFirst!, 'alice', 0);
    store.incidents.resolve(resolvedSecond!, 'alice', 0);

    // A bound nothing meets, a row at a time: each call shows the next thing the bound purges.
    const steps: string[] = [];
    let purge: SizePurge | undefined;
    for (let call = 0; call < 100 && purge?.exhausted !== true; call++) {
      purge = store.purgeToSize({ maxBytes: 1, maxRows: 1 });
      if (purge.attempts > 0) {
        const kept = ['h0', 'h1', 'h2', 'h4', 'h5'].filter((name) => stored(`${name}-0`));
        steps.push(`attempts, kept ${kept.join(' ')}`);
      }
      if (purge.incidents > 0) {
        const kept = [resolvedFirst, resolvedSecond, open].filter(
          (id) => store.incidents.get(id!) !== undefined,
        );
        steps.push(`incident and ${purge.findings} finding, kept ${kept.length}`);
        expect(store.incidents.get(resolvedFirst!)).toBeUndefined();
      }
    }
    expect(purge?.exhausted).toBe(true);
    expect(steps).toEqual([
      'attempts, kept h1 h2 h4 h5',
      'attempts, kept h2 h4 h5',
      'attempts, kept h4 h5',
      'incident and 1 finding, kept 2',
      'incident and 1 finding, kept 1',
      'attempts, kept h5',
    ]);
    // The open incident and its finding stay, and so does the newest batch of attempts.
    expect(store.incidents.get(open!)?.status).toBe('open');
    expect(store.findings.ofKey('dup-2')).toHaveLength(1);
    expect(stored('h5-0')).toBe(true);
  });
});
