import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultMapping, extractAttempts } from '@keyscope/attempts';
import { decodeTraces } from '@keyscope/otlp';
import { KeyscopeStore } from '@keyscope/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillHistory, historyTemplate } from '../history-fill.ts';
import { FreshKeyPayloads } from '../workloads/fresh-key-payloads.ts';

const HOUR = 60 * 60 * 1000;

function keysOf(bodies: readonly Uint8Array[]): Set<string> {
  const keys = new Set<string>();
  for (const body of bodies) {
    for (const attempt of extractAttempts(decodeTraces(body), defaultMapping()).attempts)
      keys.add(attempt.key);
  }
  return keys;
}

describe('fresh-key payloads', () => {
  it('sends every pass under keys neither the simulator nor an earlier pass used, as many of them', () => {
    const payloads = new FreshKeyPayloads(4_000, 1);
    const original = keysOf(payloads.original().bodies);
    const first = keysOf(payloads.next().bodies);
    const second = keysOf(payloads.next().bodies);
    expect(first.size).toBe(original.size);
    expect(second.size).toBe(original.size);
    for (const key of first) {
      expect(original.has(key)).toBe(false);
      expect(second.has(key)).toBe(false);
    }
  });
});

describe('fillHistory', () => {
  let dir: string;
  const payloads = new FreshKeyPayloads(4_000, 1).original();
  const template = historyTemplate(payloads);
  const window = {
    fromUnixMillis: payloads.endUnixMillis - 6 * HOUR,
    toUnixMillis: payloads.endUnixMillis - HOUR,
  };
  let filled: ReturnType<typeof fillHistory>;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'keyscope-history-fill-'));
    filled = fillHistory(join(dir, 'keyscope.db'), 5_000, window, template, 3);
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes whole keys of the workload shape until it holds the attempts asked for', () => {
    const store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
    try {
      expect(filled.attempts).toBeGreaterThanOrEqual(5_000);
      expect(store.counts().attempts).toBe(filled.attempts);
      const perKey = template.attempts / template.keys.length;
      expect(filled.keys).toBeGreaterThan((5_000 / perKey) * 0.9);
      expect(filled.keys).toBeLessThan((5_000 / perKey) * 1.1);
    } finally {
      store.close();
    }
  });

  it('spreads the attempts over the window, oldest first, with node activity up to its end', () => {
    const store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
    try {
      const oldest = store.evidenceSinceUnixMillis()!;
      expect(oldest).toBeGreaterThanOrEqual(window.fromUnixMillis);
      expect(oldest).toBeLessThan(window.fromUnixMillis + HOUR);
      const activity = store.recentActivity(10 * 60 * 1000);
      expect(activity.length).toBeGreaterThan(0);
      const latest = Math.max(...activity.map((sample) => sample.bucketStartUnixMillis));
      expect(latest).toBeGreaterThan(window.toUnixMillis - 60_000);
      expect(latest).toBeLessThanOrEqual(window.toUnixMillis + 1000);
    } finally {
      store.close();
    }
  });
});
