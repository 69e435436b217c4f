import { type Attempt, defaultMapping, extractAttempts, type NodeActivity } from '@keyscope/attempts';
import { decodeTraces } from '@keyscope/otlp';
import { KeyscopeStore } from '@keyscope/store';
import { UuidSource } from './uuid-source.ts';
import type { EncodedPayloads } from './workloads/encoded-payloads.ts';

/**
 * The history a long-running service holds: attempts of keys it saw over its retry horizon, and
 * the node activity of the same seconds, written straight into a store through its own API
 * (`KeyscopeStore.transaction`, `attemptLog.append`, `recordActivity`), as the pipeline writes
 * them, without decoding or judging anything.
 *
 * Its shape is the simulator's benchmark scenario's: each history key is one of the workload's
 * keys (its 3–4 attempts: client sends, arrivals, server executions at one or two tiers, on the
 * same nodes) under a fresh key of the same length (a UUID), moved in time so that the keys are
 * spread evenly over the history's window. The workload's node activity is repeated over the
 * window second by second.
 */
export interface HistoryTemplate {
  /** The workload's attempts by key, in the order the keys first came. */
  keys: Attempt[][];
  /** The workload's node activity by second from its first, in order. */
  seconds: NodeActivity[][];
  firstSecondUnixMillis: number;
  attempts: number;
}

export function historyTemplate(workload: EncodedPayloads): HistoryTemplate {
  const mapping = defaultMapping();
  const byKey = new Map<string, Attempt[]>();
  const bySecond = new Map<number, NodeActivity[]>();
  let attempts = 0;
  for (const body of workload.bodies) {
    const extracted = extractAttempts(decodeTraces(body), mapping);
    for (const attempt of extracted.attempts) {
      const list = byKey.get(attempt.key);
      if (list === undefined) byKey.set(attempt.key, [attempt]);
      else list.push(attempt);
      attempts++;
    }
    for (const sample of extracted.activity) {
      const list = bySecond.get(sample.bucketStartUnixMillis);
      if (list === undefined) bySecond.set(sample.bucketStartUnixMillis, [sample]);
      else list.push(sample);
    }
  }
  const starts = [...bySecond.keys()].sort((a, b) => a - b);
  const first = starts[0] ?? 0;
  const seconds: NodeActivity[][] = [];
  for (const start of starts) seconds[(start - first) / SECOND] = bySecond.get(start)!;
  for (let i = 0; i < seconds.length; i++) seconds[i] ??= [];
  return { keys: [...byKey.values()], seconds, firstSecondUnixMillis: first, attempts };
}

export interface HistoryWindow {
  fromUnixMillis: number;
  toUnixMillis: number;
}

export interface FilledHistory {
  attempts: number;
  keys: number;
  seconds: number;
}

/** Attempts per fill transaction: a few of the service's group commits' worth. */
const ATTEMPTS_PER_TRANSACTION = 8_192;
/** Seconds of node activity per fill transaction (see `fillHistory`). */
const ACTIVITY_SECONDS_PER_TRANSACTION = 10;
const SECOND = 1000;

/**
 * Writes about `attempts` attempts (whole keys: the last key may pass it) of fresh keys into the
 * store at `path`, spread over `window` in time order, with the node activity of those seconds.
 */
export function fillHistory(
  path: string,
  attempts: number,
  window: HistoryWindow,
  template: HistoryTemplate,
  seed: number,
  progress?: (written: number) => void,
): FilledHistory {
  const started = performance.now();
  const store = new KeyscopeStore({ path, integrityCheck: 'off' });
  const uuids = new UuidSource(seed);
  const span = window.toUnixMillis - window.fromUnixMillis;
  let written = 0;
  let key = 0;
  /** The next second of the window whose activity is still to be recorded. */
  const firstSecond = Math.floor(window.fromUnixMillis / SECOND) * SECOND;
  let activityFrom = firstSecond;
  let lastStart = window.fromUnixMillis;
  try {
    while (written < attempts) {
      store.transaction(() => {
        let inTransaction = 0;
        let at = window.fromUnixMillis;
        while (inTransaction < ATTEMPTS_PER_TRANSACTION && written < attempts) {
          const group = template.keys[key % template.keys.length]!;
          // Spread by attempts written, so the last key starts within the window whatever the sizes of the keys.
          at = window.fromUnixMillis + (span * written) / attempts;
          const name = uuids.next();
          const shift = at - group[0]!.startUnixMillis;
          for (const attempt of group) {
            store.attemptLog.append(name, {
              ...attempt,
              key: name,
              startUnixMillis: attempt.startUnixMillis + shift,
              endUnixMillis: attempt.endUnixMillis + shift,
            });
          }
          inTransaction += group.length;
          written += group.length;
          key++;
        }
        lastStart = at;
      });
      // The activity up to the last key's start, a few seconds per transaction as the service's
      // commits record it: the store folds every 64 transactions' activity into one chunk, and
      // a transaction holding minutes of it would make chunks of hours that a restart reads whole.
      while (activityFrom <= lastStart) {
        const samples: NodeActivity[] = [];
        const until = Math.min(lastStart, activityFrom + (ACTIVITY_SECONDS_PER_TRANSACTION - 1) * SECOND);
        for (; activityFrom <= until; activityFrom += SECOND) {
          const index = ((activityFrom - firstSecond) / SECOND) % template.seconds.length;
          for (const sample of template.seconds[index]!) {
            samples.push({ ...sample, bucketStartUnixMillis: activityFrom });
          }
        }
        store.transaction(() => store.recordActivity(samples));
      }
      progress?.(written);
    }
  } finally {
    store.close();
  }
  return { attempts: written, keys: key, seconds: (performance.now() - started) / 1000 };
}
