import type { Attempt, ExtractedAttempts } from '@keyscope/attempts';
import { type AttemptLog, createDetector } from '@keyscope/detector';
import type { AttemptStream } from './detector-stream.ts';

/**
 * Memory the detector holds per tracked key (JS heap plus ArrayBuffer stores). Measured with `--expose-gc`: after a full
 * collection, before and after ingesting `keys` distinct keys, divided by the keys it reports in
 * memory.
 *
 * The keys are the stream's keys replayed under fresh names: each synthetic key copies the
 * attempts of one real key (its tiers, nodes, tenant, outcomes), shifted later in time, so the
 * per-key state is as varied as the simulator's. Key strings are built flat, as the decoder
 * builds them, and the attempts are dropped after each call, so what remains is what the
 * detector keeps.
 *
 * The AttemptLog keeps nothing here: the service keeps it in SQLite (off the JS heap), and
 * the in-memory log for tests would otherwise dominate the figure with whole attempts.
 */
export interface MemoryPass {
  bytesPerKey: number;
  keysInMemory: number;
}

const KEYS_PER_CALL = 1000;

export function measureMemoryPerKey(stream: AttemptStream, keys: number): MemoryPass {
  const gc = globalThis.gc;
  if (gc === undefined) throw new Error('memory per key needs node --expose-gc');
  const templates = keyTemplates(stream);
  const cycleMillis = timeSpanOf(templates) + 1000;
  collect(gc);
  const before = retainedBytes();
  const detector = createDetector(undefined, { attemptLog: keepNothingLog() });
  for (let first = 0; first < keys; first += KEYS_PER_CALL) {
    detector.ingest(syntheticBatch(templates, first, Math.min(KEYS_PER_CALL, keys - first), cycleMillis));
  }
  collect(gc);
  const after = retainedBytes();
  const { keysInMemory } = detector.stats();
  return { bytesPerKey: (after - before) / keysInMemory, keysInMemory };
}

/** The JS heap plus ArrayBuffer backing stores, which live outside it (the detector's key columns). */
function retainedBytes(): number {
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
}

/** Collections until the heap stops shrinking: one pass can leave garbage of the previous one. */
function collect(gc: () => void): void {
  gc();
  gc();
}

function keyTemplates(stream: AttemptStream): Attempt[][] {
  const byKey = new Map<string, Attempt[]>();
  for (const batch of stream.batches) {
    for (const attempt of batch.attempts) {
      const attempts = byKey.get(attempt.key);
      if (attempts === undefined) byKey.set(attempt.key, [attempt]);
      else attempts.push(attempt);
    }
  }
  if (byKey.size === 0) throw new Error('the stream has no keyed attempts to copy');
  return [...byKey.values()];
}

function timeSpanOf(templates: Attempt[][]): number {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const attempts of templates) {
    for (const attempt of attempts) {
      first = Math.min(first, attempt.startUnixMillis);
      last = Math.max(last, attempt.endUnixMillis);
    }
  }
  return last - first;
}

function syntheticBatch(
  templates: Attempt[][],
  firstKey: number,
  count: number,
  cycleMillis: number,
): ExtractedAttempts {
  const attempts: Attempt[] = [];
  for (let n = firstKey; n < firstKey + count; n++) {
    const template = templates[n % templates.length]!;
    const shift = Math.floor(n / templates.length) * cycleMillis;
    const key = keyName(n);
    template.forEach((attempt, i) => {
      attempts.push({
        ...attempt,
        key,
        traceId: hexId(n, 32),
        spanId: hexId(n * 16 + i, 16),
        startUnixMillis: attempt.startUnixMillis + shift,
        endUnixMillis: attempt.endUnixMillis + shift,
      });
    });
  }
  return { attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } };
}

const HEX = '0123456789abcdef';

/** A UUID-shaped key, unique per `n`, as a flat one-byte string (not a concatenation). */
function keyName(n: number): string {
  const bytes = Buffer.allocUnsafe(36);
  let x = Math.imul(n + 1, 0x9e3779b1) >>> 0;
  let y = n;
  for (let i = 0; i < 36; i++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      bytes[i] = 0x2d;
      continue;
    }
    let digit: number;
    if (i >= 24) {
      digit = y & 15;
      y = Math.floor(y / 16);
    } else {
      digit = x & 15;
      x = (Math.imul(x, 0x85ebca6b) + 0x27d4eb2f) >>> 0;
    }
    bytes[i] = HEX.charCodeAt(digit);
  }
  return bytes.toString('latin1');
}

function hexId(n: number, length: number): string {
  return n.toString(16).padStart(length, '0');
}

function keepNothingLog(): AttemptLog {
  return { append: () => true, attemptsOf: () => [], expire: () => {} };
}
