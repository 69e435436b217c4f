import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EncodedPayloads } from './workloads/encoded-payloads.ts';

/**
 * Writes every payload as its own `.pb` file in `dir` — OTLP/HTTP bodies as a capture keeps them,
 * one of the formats `keyscope analyze` reads (docs/analyze.md). Names are zero-padded so analyze's
 * code-point order of names is the order the spans were sent in. Returns `dir`.
 */
export function writeArchive(dir: string, payloads: EncodedPayloads): string {
  const width = String(payloads.bodies.length).length;
  for (const [i, body] of payloads.bodies.entries()) {
    writeFileSync(join(dir, `traces-${String(i).padStart(width, '0')}.pb`), body);
  }
  return dir;
}
