import { scenarios, simulateBatches } from '@keyscope/simulator';
import { type EncodedPayloads, encodePayloads } from './encoded-payloads.ts';

/** Spans per payload: the OpenTelemetry SDK's BatchSpanProcessor exports at most 512 at a time. */
export const SPANS_PER_PAYLOAD = 512;

/**
 * The simulator's benchmark scenario (about 20% of spans are mutation attempts, with their
 * duplicates and routing failures) in time order, 512 spans per payload as a collector forwards
 * them: each payload mixes the spans of many services and nodes.
 */
export function simulatedPayloads(spans: number, seed: number): EncodedPayloads {
  const run = simulateBatches(scenarios.benchmark({ spans }), { seed, batchSize: SPANS_PER_PAYLOAD });
  return encodePayloads(run.batches);
}
