import type { BenchSizes } from '../bench-sizes.ts';
import { measureMemoryPerKey } from './detector-memory.ts';
import { ingestStream, latencyPercentiles, simulatedAttemptStream } from './detector-stream.ts';
import { measureWindowMemoryPerNode } from './routing-window-memory.ts';

/**
 * The detector section's measurements, in a process of their own: started with `--expose-gc`
 * for the memory figure, and with a heap that no other section has filled.
 */

export interface DetectorMeasurements {
  attempts: number;
  batches: number;
  /** Per repetition. */
  attemptsPerSecond: number[];
  cpuShares: number[];
  latencyP50Millis: number[];
  latencyP99Millis: number[];
  /** Of the last repetition (every repetition sees the same stream). */
  secondExecutions: number;
  foundInSameCall: number;
  neverFound: number;
  bytesPerKey: number[];
  keysInMemory: number;
  /** Per repetition: the routing window's memory per node (routing-window-memory.ts). */
  windowBytesPerNode: number[];
}

export type DetectorProcessReply =
  | { type: 'measured'; measurements: DetectorMeasurements }
  | { type: 'failed'; message: string };

function measure(sizes: BenchSizes): DetectorMeasurements {
  const stream = simulatedAttemptStream(sizes.detector.streamSpans, sizes.seed);
  ingestStream(stream);
  const measurements: DetectorMeasurements = {
    attempts: stream.attempts,
    batches: stream.batches.length,
    attemptsPerSecond: [],
    cpuShares: [],
    latencyP50Millis: [],
    latencyP99Millis: [],
    secondExecutions: 0,
    foundInSameCall: 0,
    neverFound: 0,
    bytesPerKey: [],
    keysInMemory: 0,
    windowBytesPerNode: [],
  };
  for (let i = 0; i < sizes.repetitions; i++) {
    const pass = ingestStream(stream);
    const { p50, p99 } = latencyPercentiles(pass);
    measurements.attemptsPerSecond.push(pass.attemptsPerSecond);
    measurements.cpuShares.push(pass.cpuShare);
    measurements.latencyP50Millis.push(p50);
    measurements.latencyP99Millis.push(p99);
    measurements.secondExecutions = pass.latenciesMillis.length + pass.neverFound;
    measurements.foundInSameCall = pass.foundInSameCall;
    measurements.neverFound = pass.neverFound;
  }
  for (let i = 0; i < sizes.repetitions; i++) {
    const pass = measureMemoryPerKey(stream, sizes.detector.memoryKeys);
    measurements.bytesPerKey.push(pass.bytesPerKey);
    measurements.keysInMemory = pass.keysInMemory;
  }
  for (let i = 0; i < sizes.repetitions; i++) {
    measurements.windowBytesPerNode.push(
      measureWindowMemoryPerNode(sizes.detector.windowNodes, sizes.detector.windowSeconds),
    );
  }
  return measurements;
}

process.once('message', (sizes: BenchSizes) => {
  let reply: DetectorProcessReply;
  try {
    reply = { type: 'measured', measurements: measure(sizes) };
  } catch (error) {
    reply = { type: 'failed', message: (error as Error).stack ?? String(error) };
  }
  process.send?.(reply, () => process.disconnect());
});
// A parent that goes away (Ctrl-C on `pnpm bench`) takes this process with it.
process.on('disconnect', () => process.exit(0));
