import type { Attempt, ExtractedAttempts } from '@keyscope/attempts';
import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import {
  type AttemptLog,
  createDetector,
  createMemoryAttemptLog,
  defaultDetectorConfig,
} from '../src/index.ts';

function batch(attempts: Attempt[]): ExtractedAttempts {
  return { attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } };
}

/** A memory log that counts the attempts it hands back: what judging keys costs. */
function countingLog(): AttemptLog & { read: number } {
  const inner = createMemoryAttemptLog();
  const log = {
    read: 0,
    append: (partitionKey: string, attempt: Attempt) => inner.append(partitionKey, attempt),
    attemptsOf(partitionKey: string) {
      const attempts = inner.attemptsOf(partitionKey);
      log.read += attempts.length;
      return attempts;
    },
    expire: (beforeUnixMillis: number) => inner.expire(beforeUnixMillis),
  };
  return log;
}

/** Request `i` of a client that sends one constant key: four node stores, each executing it once a second. */
function constantKeyRequest(i: number, key = 'undefined'): Attempt {
  return server({ key, node: `payments-${i % 4}`, at: i / 1000, outcome: i % 2 === 0 ? 'miss' : 'hit' });
}

describe('hot keys', () => {
  it('judges 200,000 attempts of one constant key without failing, and reports it as a hot key', () => {
    const detector = createDetector();
    for (let from = 0; from < 200_000; from += 1_000) {
      const attempts: Attempt[] = [];
      for (let i = from; i < from + 1_000; i++) attempts.push(constantKeyRequest(i));
      detector.ingest(batch(attempts));
    }
    detector.flush();

    const [finding] = detector.findings();
    expect(finding).toMatchObject({ key: 'undefined', class: 'cross_store_duplicate', evidenceCapped: true });
    expect(finding!.attempts).toHaveLength(10_000);
    expect(detector.stats()).toMatchObject({ hotKeys: 1, cappedAttempts: 190_000, attempts: 200_000 });
  });

  it('reads a key back a bounded number of times per attempt, at 1,000 as at 100,000 attempts', () => {
    const readsPerAttempt = (attempts: number): number => {
      const log = countingLog();
      const detector = createDetector(
        { ...defaultDetectorConfig(), maxAttemptsPerKey: 1_000_000 },
        { attemptLog: log },
      );
      for (let from = 0; from < attempts; from += 100) {
        const requests: Attempt[] = [];
        for (let i = from; i < from + 100; i++) requests.push(constantKeyRequest(i, `k-${attempts}`));
        detector.ingest(batch(requests));
      }
      expect(detector.findings()).toHaveLength(1);
      return log.read / attempts;
    };
    const small = readsPerAttempt(1_000);
    const large = readsPerAttempt(100_000);
    // Re-read whenever its attempts double: under twice its attempts in all.
    expect(small).toBeLessThan(2);
    expect(large).toBeLessThan(2);
  });

  it('keeps a key’s first maxAttemptsPerKey attempts, counts the rest, and says its finding’s evidence was capped', () => {
    const detector = createDetector({ ...defaultDetectorConfig(), maxAttemptsPerKey: 5 });
    const hot = Array.from({ length: 8 }, (_, i) => server({ key: 'hot', store: 's', at: i * 10 }));
    const normal = [server({ key: 'k2', store: 's', at: 0 }), server({ key: 'k2', store: 's', at: 10 })];
    detector.ingest(batch([...hot, ...normal]));
    detector.flush();

    const byKey = new Map(detector.findings().map((finding) => [finding.key, finding]));
    expect(byKey.get('hot')).toMatchObject({ evidenceCapped: true, executions: 5 });
    expect(byKey.get('hot')!.attempts.map((a) => a.spanId)).toEqual(hot.slice(0, 5).map((a) => a.spanId));
    expect(byKey.get('k2')).toMatchObject({ evidenceCapped: false, executions: 2 });
    expect(detector.stats()).toMatchObject({ hotKeys: 1, cappedAttempts: 3 });
  });

  it('knows a capped key after a restart from the attempts its log holds', () => {
    const log = createMemoryAttemptLog();
    const config = { ...defaultDetectorConfig(), maxAttemptsPerKey: 5 };
    createDetector(config, { attemptLog: log }).ingest(
      batch(Array.from({ length: 6 }, (_, i) => server({ key: 'hot', store: 's', at: i }))),
    );
    const restarted = createDetector(config, { attemptLog: log });
    restarted.ingest(batch([server({ key: 'hot', store: 's', at: 7 })]));
    expect(log.attemptsOf('hot')).toHaveLength(5);
    expect(restarted.stats()).toMatchObject({ hotKeys: 1, cappedAttempts: 1, rebuiltKeys: 1 });
  });

  it('stops counting a hot key once its attempts are past the retry horizon', () => {
    const config = { ...defaultDetectorConfig(), maxAttemptsPerKey: 3 };
    const detector = createDetector(config);
    detector.ingest(batch(Array.from({ length: 4 }, (_, i) => server({ key: 'hot', store: 's', at: i }))));
    expect(detector.stats().hotKeys).toBe(1);
    detector.tick(detector.stats().watermarkUnixMillis + config.retryHorizonMillis + 1);
    expect(detector.stats().hotKeys).toBe(0);
  });
});
