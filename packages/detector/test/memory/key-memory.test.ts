import { type Attempt, partitionKey } from '@keyscope/attempts';
import { arrival, client, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { defaultDetectorConfig } from '../../src/config.ts';
import { ScopeReport } from '../../src/coverage/scope-report.ts';
import { createMemoryAttemptLog } from '../../src/memory/attempt-log.ts';
import { KeyMemory } from '../../src/memory/key-memory.ts';

function memoryOf(overrides: { maxKeys?: number; maxAttemptsPerKey?: number } = {}) {
  const config = { ...defaultDetectorConfig(), ...overrides };
  const log = createMemoryAttemptLog();
  const scopes = new ScopeReport();
  const forgotten: { key: string; slot: number }[] = [];
  const memory = new KeyMemory(config, log, scopes, (key, slot) => forgotten.push({ key, slot }));
  /** What the detector does with a fresh attempt: slot, admit, log, observe. */
  const arrive = (attempt: Attempt): boolean => {
    const key = partitionKey(attempt, config);
    const slot = memory.slotOf(key);
    if (!memory.admit(slot)) return false;
    if (!log.append(key, attempt)) return false;
    return memory.observe(slot, attempt);
  };
  return { memory, log, scopes, forgotten, arrive };
}

describe('KeyMemory', () => {
  it('evicts the least recently touched keys down to nine tenths of maxKeys, announcing each with its slot', () => {
    const { memory, forgotten, arrive } = memoryOf({ maxKeys: 10 });
    for (let i = 0; i < 10; i++) arrive(server({ key: `k${i}`, at: i }));
    expect(memory.size).toBe(10);

    arrive(server({ key: 'k10', at: 10 }));

    expect(forgotten.map((f) => f.key)).toEqual(['k0', 'k1']);
    expect(memory.size).toBe(9);
    expect(memory.evictedKeys).toBe(2);
    expect(memory.attemptCount('k0')).toBe(0);
    expect(memory.attemptCount('k10')).toBe(1);
  });

  it('keeps the key it just added when maxKeys is 1, evicting the one before it', () => {
    const { memory, forgotten, arrive } = memoryOf({ maxKeys: 1 });
    arrive(server({ key: 'k0', node: 'payments-a', at: 0 }));
    arrive(server({ key: 'k1', node: 'payments-a', at: 1 }));

    expect(forgotten.map((f) => f.key)).toEqual(['k0']);
    expect(memory.size).toBe(1);
    expect(memory.attemptCount('k1')).toBe(1);
    // The key in memory goes on counting: its second execution on another node makes it suspect.
    expect(arrive(server({ key: 'k1', node: 'payments-b', at: 2 }))).toBe(true);
  });

  it('rebuilds an evicted key from the attempts the log holds, without counting them into the scope report again', () => {
    const { memory, scopes, arrive } = memoryOf({ maxKeys: 10 });
    arrive(server({ key: 'k0', node: 'payments-a', at: 0 }));
    for (let i = 1; i <= 10; i++) arrive(server({ key: `k${i}`, at: i }));
    expect(memory.attemptCount('k0')).toBe(0);
    const keysCounted = scopes.rows()[0]!.keys;

    const suspect = arrive(server({ key: 'k0', node: 'payments-b', at: 11 }));

    expect(memory.rebuiltKeys).toBe(1);
    expect(memory.attemptCount('k0')).toBe(2);
    // Two executions on two nodes at one tier: the rebuilt state remembered the first one.
    expect(suspect).toBe(true);
    expect(scopes.rows()[0]!.keys).toBe(keysCounted);
  });

  it('refuses and counts the attempts of a key that reached maxAttemptsPerKey', () => {
    const { memory, arrive } = memoryOf({ maxAttemptsPerKey: 3 });
    const kept = [0, 1, 2, 3, 4].map((i) => arrive(client({ key: 'hot', at: i })));

    expect(memory.attemptCount('hot')).toBe(3);
    expect(memory.hotKeys).toBe(1);
    expect(memory.cappedAttempts).toBe(2);
    expect(kept.slice(3)).toEqual([false, false]);
  });

  it('counts a key once per tier it reaches in the scope report, and judges it only once it is suspect', () => {
    const { scopes, arrive } = memoryOf();
    expect(arrive(server({ key: 'k1', node: 'payments-a', at: 0 }))).toBe(false);
    expect(arrive(arrival({ key: 'k1', node: 'payments-a', at: 1, statusCode: 200 }))).toBe(false);
    expect(arrive(server({ key: 'k1', node: 'payments-b', at: 2 }))).toBe(true);

    expect(scopes.rows()).toMatchObject([{ service: 'payments', keys: 1 }]);
  });

  it('forgets the keys last seen before the cutoff, oldest first, and keeps the rest', () => {
    const { memory, forgotten, arrive } = memoryOf();
    arrive(server({ key: 'old', at: 0 }));
    arrive(server({ key: 'new', at: 100 }));

    memory.forgetBefore(memory.lastSeen('new'));

    expect(forgotten.map((f) => f.key)).toEqual(['old']);
    expect(memory.size).toBe(1);
    expect(memory.lastSeen('old')).toBe(Number.NEGATIVE_INFINITY);
  });

  it('compacts its names to those the keys in memory still use once it has interned enough of them', () => {
    const { memory, arrive } = memoryOf();
    // Each key of a tenant of its own: 66,000 names, more than the interner holds before compacting.
    for (let i = 0; i < 66_000; i++) arrive(client({ key: `k${i}`, tenant: `tenant-${i}`, at: i / 1000 }));
    memory.forgetBefore(memory.lastSeen('k65990'));
    expect(memory.size).toBe(10);
    expect(memory.internedNames).toBe(66_000);

    memory.compactInterner();

    expect(memory.internedNames).toBe(10);
  });

  it('counts a key once at its tier across a compaction of its names', () => {
    const { memory, scopes, arrive } = memoryOf();
    for (let i = 0; i < 66_000; i++) arrive(client({ key: `k${i}`, tenant: `tenant-${i}`, at: i / 1000 }));
    // Its tier's name is interned after the tenants', so compacting gives it another id.
    arrive(server({ key: 'kept', at: 100 }));
    memory.forgetBefore(memory.lastSeen('kept'));
    memory.compactInterner();
    expect(memory.internedNames).toBeLessThan(10);

    arrive(arrival({ key: 'kept', at: 101 }));

    expect(scopes.rows()[0]).toMatchObject({ keys: 1 });
  });
});
