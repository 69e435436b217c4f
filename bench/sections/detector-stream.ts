import { type Attempt, defaultMapping, type ExtractedAttempts, extractAttempts } from '@keyscope/attempts';
import { createDetector, type Detector, tierName } from '@keyscope/detector';
import { scenarios, simulateBatches } from '@keyscope/simulator';
import { percentile } from '../measure.ts';
import { SPANS_PER_PAYLOAD } from '../workloads/simulated-payloads.ts';

/**
 * The detector fed a realistic stream: the simulator's benchmark scenario, extracted into
 * attempts per 512-span payload before any timing, ingested in time order one payload at a time
 * as the service ingests one OTLP request at a time.
 */
export interface AttemptStream {
  batches: ExtractedAttempts[];
  attempts: number;
  /**
   * Per batch, the keys whose second execution it delivers: a server attempt `miss` of a key at
   * a dedup tier (service and operation) where the key had already executed once.
   */
  secondExecutions: string[][];
}

export function simulatedAttemptStream(spans: number, seed: number): AttemptStream {
  const run = simulateBatches(scenarios.benchmark({ spans }), { seed, batchSize: SPANS_PER_PAYLOAD });
  const mapping = defaultMapping();
  // Redelivered spans are not second executions (the detector's attempt log refuses them).
  const seen = new Set<string>();
  const executions = new Map<string, number>();
  const batches: ExtractedAttempts[] = [];
  const secondExecutions: string[][] = [];
  let attempts = 0;
  for (const spansOfBatch of run.batches) {
    const batch = extractAttempts(spansOfBatch, mapping);
    const seconds = new Set<string>();
    for (const attempt of batch.attempts) {
      if (!isExecution(attempt)) continue;
      const span = attempt.traceId + attempt.spanId;
      if (seen.has(span)) continue;
      seen.add(span);
      const at = `${attempt.key}\u0000${tierName(attempt.placement.service, attempt.operation)}`;
      const count = (executions.get(at) ?? 0) + 1;
      executions.set(at, count);
      if (count === 2) seconds.add(attempt.key);
    }
    batches.push(batch);
    secondExecutions.push([...seconds]);
    attempts += batch.attempts.length;
  }
  return { batches, attempts, secondExecutions };
}

function isExecution(attempt: Attempt): boolean {
  return attempt.kind === 'server' && attempt.outcome === 'miss';
}

/** What a pass needs of a detector: another checkout's detector (`--detector-baseline`) has at least this. */
export type StreamDetector = Pick<Detector, 'ingest'>;

export interface StreamPass {
  attemptsPerSecond: number;
  /** Cores this process used while ingesting: under 1 when other work took its core. */
  cpuShare: number;
  /** Milliseconds from the ingest call that delivered a second execution to the finding. */
  latenciesMillis: number[];
  /** Second executions whose finding came out of the very ingest call that delivered them. */
  foundInSameCall: number;
  /** Second executions that no ingest call reported a finding for. */
  neverFound: number;
}

/**
 * Ingests the whole stream into a fresh detector (default settings, in-memory attempt log; by
 * default this checkout's),
 * timing every `ingest` call. A second execution's latency is the time of the call that delivered
 * it, plus that of every later call until one reports a finding of its key: the detector runs
 * synchronously, so nothing else stands between arrival and finding.
 */
export function ingestStream(
  stream: AttemptStream,
  create: () => StreamDetector = createDetector,
): StreamPass {
  const detector = create();
  /** Keys whose second execution was delivered and not yet reported: since which call, how long. */
  const waiting = new Map<string, { sinceCall: number; millis: number }>();
  const latenciesMillis: number[] = [];
  let foundInSameCall = 0;
  let totalSeconds = 0;
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  stream.batches.forEach((batch, call) => {
    const started = process.hrtime.bigint();
    const changes = detector.ingest(batch);
    const millis = Number(process.hrtime.bigint() - started) / 1e6;
    totalSeconds += millis / 1000;
    for (const key of stream.secondExecutions[call]!) {
      if (!waiting.has(key)) waiting.set(key, { sinceCall: call, millis: 0 });
    }
    if (waiting.size === 0) return;
    for (const entry of waiting.values()) entry.millis += millis;
    for (const finding of changes.findings) {
      // A scope violation is the finding for at most one execution, never for a second one.
      if (finding.class === 'scope_violation') continue;
      const entry = waiting.get(finding.key);
      if (entry === undefined) continue;
      latenciesMillis.push(entry.millis);
      if (entry.sinceCall === call) foundInSameCall++;
      waiting.delete(finding.key);
    }
  });
  const used = process.cpuUsage(cpu);
  const elapsedMicros = Number(process.hrtime.bigint() - started) / 1000;
  return {
    attemptsPerSecond: stream.attempts / totalSeconds,
    cpuShare: (used.user + used.system) / elapsedMicros,
    latenciesMillis,
    foundInSameCall,
    neverFound: waiting.size,
  };
}

export function latencyPercentiles(pass: StreamPass): { p50: number; p99: number } {
  return { p50: percentile(pass.latenciesMillis, 50), p99: percentile(pass.latenciesMillis, 99) };
}
