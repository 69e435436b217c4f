import { defaultMapping, extractAttempts } from '@keyscope/attempts';
import { createDetector, type Finding } from '@keyscope/detector';
import { type DecodeOptions, decodeTraces } from '@keyscope/otlp';
import { secondsOf } from './measure.ts';
import type { EncodedPayloads } from './workloads/encoded-payloads.ts';

export interface InMemoryDetection {
  seconds: number;
  findings: Finding[];
}

/**
 * keyscope's detection without a service around it: decode → extract attempts → detector over the
 * first `payloads` bodies, one thread, a fresh detector (whose attempt log, like the service's,
 * refuses redelivered attempts). Only the loop is timed.
 */
export function detectInMemory(
  workload: EncodedPayloads,
  payloads: number,
  decodeOptions: DecodeOptions | undefined,
): InMemoryDetection {
  const bodies = workload.bodies.slice(0, payloads);
  const mapping = defaultMapping();
  const detector = createDetector();
  const seconds = secondsOf(() => {
    for (const body of bodies) {
      detector.ingest(extractAttempts(decodeTraces(body, decodeOptions), mapping));
    }
  });
  // The service ticks every second and once more when it stops; one tick at the same clock
  // leaves the in-memory findings where the service's end up.
  detector.tick(workload.endUnixMillis);
  return { seconds, findings: detector.findings() };
}
