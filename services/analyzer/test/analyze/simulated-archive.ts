import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { encodeTraces, encodeTracesJson, type Span } from '@keyscope/otlp';
import { type GroundTruth, scenarios, simulate, splitIntoPayloads } from '@keyscope/simulator';

/**
 * Archived traces for analyze's tests: a small node failover from the simulator, cut into the
 * requests an exporter would have sent, and writers for every file layout analyze reads.
 */
export interface SimulatedFailover {
  spans: Span[];
  truth: GroundTruth;
  /** The spans as 12 export requests, in time order. */
  requests: Span[][];
  /** The keys that truly ran twice (or crossed their scope), sorted. */
  truthKeys: string[];
}

let cached: SimulatedFailover | undefined;

/** Generated once per test file: a few thousand spans, a few keys executed on two nodes. */
export function simulatedFailover(): SimulatedFailover {
  if (cached === undefined) {
    const { spans, truth } = simulate(
      scenarios.nodeFailover({ requests: 600, nonMutationSpanFraction: 0.3 }),
      {
        seed: 1,
      },
    );
    cached = {
      spans,
      truth,
      requests: splitIntoPayloads(spans, 12, 1),
      truthKeys: truth.keys.map((k) => k.key).sort(),
    };
  }
  return cached;
}

export function temporaryFolder(): string {
  return mkdtempSync(join(tmpdir(), 'keyscope-analyze-'));
}

/** Writes `bytes` at `path` (creating folders), gzipped when the name ends in `.gz`. */
export function writeInput(path: string, bytes: Uint8Array | string): string {
  mkdirSync(dirname(path), { recursive: true });
  const raw = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
  writeFileSync(path, path.endsWith('.gz') ? gzipSync(raw) : raw);
  return path;
}

/** One protobuf ExportTraceServiceRequest, as `otlphttp` sends it (and a body dump stores it). */
export function protobufRequest(spans: readonly Span[]): Uint8Array {
  return encodeTraces(spans);
}

/** One OTLP/JSON request. */
export function jsonRequest(spans: readonly Span[]): string {
  return JSON.stringify(encodeTracesJson(spans));
}

/** One JSON request per line, each ended by a newline. */
export function jsonLines(requests: readonly (readonly Span[])[]): string {
  return requests.map((spans) => `${jsonRequest(spans)}\n`).join('');
}

/**
 * JSON lines as the Collector's file exporter writes them (`format: json`, no compression): per
 * exported batch, the pdata JSON marshaler's output — which leaves out every empty field (no
 * `parentSpanId` on roots, no empty `events` or `status.message`) and carries `flags` and schema
 * urls — then one `\n` (exportMessageAsLine). Rotation names files `traces-<time>.json`.
 */
export function collectorJsonLines(requests: readonly (readonly Span[])[]): string {
  return requests
    .map((spans) => {
      const request = encodeTracesJson(spans) as { resourceSpans: Record<string, unknown>[] };
      for (const resourceSpans of request.resourceSpans) {
        resourceSpans.schemaUrl = 'https://opentelemetry.io/schemas/1.26.0';
        for (const scopeSpans of resourceSpans.scopeSpans as Record<string, unknown>[]) {
          for (const span of scopeSpans.spans as Record<string, unknown>[]) {
            span.flags = 257;
            omitEmpty(span.status as Record<string, unknown>);
            if (Object.keys(span.status as object).length === 0) delete span.status;
            omitEmpty(span);
          }
        }
      }
      return `${JSON.stringify(request)}\n`;
    })
    .join('');
}

function omitEmpty(object: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(object)) {
    if (value === '' || value === 0 || (Array.isArray(value) && value.length === 0)) delete object[name];
  }
}
