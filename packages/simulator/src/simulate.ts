import type { Span } from '@keyscope/otlp';
import { simulateBackgroundRequest, simulateHealthCheck } from './background-traffic.ts';
import { FailureSchedule } from './failure-schedule.ts';
import { headSample } from './head-sampling.ts';
import { simulateMutationFlow } from './mutation-flow.ts';
import { Prng } from './prng.ts';
import { type Scenario, validateScenario } from './scenario.ts';
import type { SimContext } from './sim-context.ts';
import { IDEMPOTENCY_KEY_HEADER } from './span-builder.ts';
import { TimeQueue } from './time-queue.ts';
import { buildTopology } from './topology.ts';
import { classifyKey, type GroundTruth, TruthRecorder } from './truth.ts';

export const DEFAULT_SEED = 1;
export const DEFAULT_BATCH_SIZE = 1000;
/** Node names do not depend on the run seed, so one scenario keeps its nodes across seeds. */
const TOPOLOGY_SEED = 0x6b657973;

export interface SimulateOptions {
  seed?: number;
}

export interface BatchOptions {
  seed?: number;
  /** Spans per batch; the last batch may be smaller. */
  batchSize?: number;
}

export interface Simulation {
  spans: Span[];
  truth: GroundTruth;
}

export interface SimulationBatches {
  /**
   * Batches in non-decreasing span start time. Every iteration regenerates the run from the seed
   * (identically); only about a few seconds of simulated traffic is held in memory at a time.
   */
  batches: Iterable<Span[]>;
  /**
   * Ground truth of the run. Complete once an iteration of `batches` has finished; called earlier,
   * it runs the simulation once on its own (discarding the spans) to compute it.
   */
  truth(): GroundTruth;
  /** The most spans the current (or last) iteration has held at once: generated, not yet handed out. */
  peakBufferedSpans(): number;
}

/** Runs a scenario and returns every span (sorted by start time) with its ground truth. */
export function simulate(scenario: Scenario, options: SimulateOptions = {}): Simulation {
  const run = simulateBatches(scenario, { ...options, batchSize: 8192 });
  const spans: Span[] = [];
  for (const batch of run.batches) for (const span of batch) spans.push(span);
  return { spans, truth: run.truth() };
}

/** Runs a scenario lazily: memory stays bounded however many spans the scenario produces. */
export function simulateBatches(scenario: Scenario, options: BatchOptions = {}): SimulationBatches {
  validateScenario(scenario);
  // A snapshot: the caller may reuse and modify its scenario object between iterations.
  const frozen = structuredClone(scenario);
  const seed = options.seed ?? DEFAULT_SEED;
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!(batchSize >= 1)) throw new RangeError(`batchSize must be >= 1, received ${batchSize}`);
  const progress: Progress = { peakBufferedSpans: 0, truth: undefined };
  return {
    batches: { [Symbol.iterator]: () => generateBatches(frozen, seed, batchSize, progress) },
    truth: () => {
      if (!progress.truth) {
        const pass = generateBatches(frozen, seed, batchSize, progress);
        while (!pass.next().done);
      }
      return structuredClone(progress.truth!);
    },
    peakBufferedSpans: () => progress.peakBufferedSpans,
  };
}

/** Shared between a `SimulationBatches` and its iterations. */
interface Progress {
  /** Of the current (or last) iteration. */
  peakBufferedSpans: number;
  /** Set when an iteration completes. */
  truth: GroundTruth | undefined;
}

function* generateBatches(
  scenario: Scenario,
  seed: number,
  batchSize: number,
  progress: Progress,
): Generator<Span[]> {
  const topology = buildTopology(scenario, new Prng(TOPOLOGY_SEED));
  const schedule = new FailureSchedule(scenario, topology, new Prng(scenario.failureSeed ?? seed));
  const rng = new Prng(seed);
  const ctx: SimContext = { scenario, topology, schedule, rng };
  const recorder = new TruthRecorder(schedule.routingEvents, scenario.sampling !== undefined);
  // Units (a key's flow, a GET) are generated in order of their start; every span of a unit starts
  // at or after it, so spans older than the next unit's start are final and can be handed out.
  const queue = new TimeQueue<Span>();
  const budget = scenario.spanBudget ?? Number.POSITIVE_INFINITY;
  const f = scenario.nonMutationSpanFraction;
  const otherPerKeySpan = f / (1 - f);
  const meanGapMillis = scenario.durationMillis / Math.max(1, scenario.requests);
  let batch: Span[] = [];
  let generated = 0;
  let keySpans = 0;
  let otherSpans = 0;
  let backgroundSpans = 0;
  let backgroundUnits = 0;
  progress.peakBufferedSpans = 0;

  function* release(beforeUnixMillis: number): Generator<Span[]> {
    while (queue.peekTime() < beforeUnixMillis) {
      batch.push(queue.pop()!);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
  }
  /**
   * `sampledOut`: spans of the unit head sampling dropped, which the traffic's shape still counts
   * (keyed against other spans), so that sampling changes what is delivered and nothing else.
   */
  const admit = (spans: Span[], sampledOut: readonly Span[] = []): boolean => {
    if (generated + spans.length > budget) return false;
    for (const span of spans) queue.push(span.startTimeUnixMillis, span);
    for (const list of [spans, sampledOut]) {
      for (const span of list) {
        if (list === sampledOut && !schedule.exported(span)) continue;
        if (IDEMPOTENCY_KEY_HEADER in span.attributes || 'idempotency.key' in span.attributes) keySpans++;
        else otherSpans++;
      }
    }
    generated += spans.length;
    if (queue.size > progress.peakBufferedSpans) progress.peakBufferedSpans = queue.size;
    return true;
  };

  let next = scenario.startUnixMillis;
  let budgetReachedAt: number | undefined;
  flows: for (let i = 0; i < scenario.requests; i++) {
    const t = next;
    next = t + rng.exponential(meanGapMillis);
    yield* release(t);
    const flow = simulateMutationFlow(ctx, i, t);
    if (!admit(flow.spans, flow.sampledOut)) {
      budgetReachedAt = t;
      break;
    }
    recorder.record(classifyKey(flow.history));
    recorder.sampledOut(flow.sampledOut);
    // Ordinary traffic owed so far, spread over the gap before the next mutation.
    const meanBackground = backgroundUnits > 0 ? backgroundSpans / backgroundUnits : 3.5;
    const owed = Math.round((keySpans * otherPerKeySpan - otherSpans) / meanBackground);
    const times: number[] = [];
    for (let j = 0; j < owed; j++) times.push(rng.between(t, next));
    times.sort((a, b) => a - b);
    for (const tb of times) {
      yield* release(tb);
      // A killed node's unexported spans are lost with it, ordinary traffic's as any other.
      let spans = simulateBackgroundRequest(ctx, tb);
      let sampledOut: Span[] = [];
      if (scenario.sampling !== undefined) {
        ({ kept: spans, dropped: sampledOut } = headSample(spans, scenario.sampling));
        recorder.sampledOut(sampledOut);
      }
      spans = spans.filter((span) => schedule.exported(span));
      if (!admit(spans, sampledOut)) {
        budgetReachedAt = tb;
        break flows;
      }
      backgroundSpans += spans.length + sampledOut.filter((span) => schedule.exported(span)).length;
      backgroundUnits++;
    }
  }
  if (Number.isFinite(budget)) {
    // Pad to the exact budget with one-span units, so a benchmark gets the count it asked for.
    let t = budgetReachedAt ?? next;
    while (generated < budget) {
      t += rng.between(0.5, 5);
      yield* release(t);
      admit([simulateHealthCheck(ctx, t)]);
    }
  }
  yield* release(Number.POSITIVE_INFINITY);
  if (batch.length > 0) yield batch;
  progress.truth = recorder.truth();
}
