import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createSpanDeduplicator, defaultMapping, extractAttempts } from '@keyscope/attempts';
import { createDetector } from '@keyscope/detector';
import { type DecodeOptions, decodeTraces } from '@keyscope/otlp';
import type { BenchContext } from '../bench-context.ts';
import {
  createPersistedPipeline,
  serviceDecodeOptions,
  startLoopbackReceivers,
} from '../in-process-service.ts';
import type { LoadResult } from '../load-generator.ts';
import { cpuSecondsSince, median, pairedRatio, secondsOf } from '../measure.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';

const PERSISTED_TARGET_SPANS_PER_SECOND = 300_000;
/** The DetectionPipeline's own deduplicator size, so both paths drop the same redeliveries. */
const PIPELINE_DEDUPLICATOR_ENTRIES = 1_000_000;
/** Requests of the untimed run that warms the persisted path up. */
const WARMUP_REQUESTS = 20;

/**
 * End-to-end ingest with persistence, next to the same work in memory. Every repetition runs, on
 * the simulator's benchmark workload:
 * - in memory: decode → extract attempts → detector, in this process, no HTTP, no SQLite; once
 *   decoding every attribute, once with the service's attribute filter (as its receivers decode);
 * - persisted: the load generator posts every payload over OTLP/HTTP to the service's receivers
 *   in this process, in front of the DetectionPipeline on a fresh SQLite file; each request is
 *   answered after its transaction committed.
 * The persisted run must end with the same finding ids in SQLite as the in-memory detector holds.
 */
export const persistenceSection: Section = {
  name: 'persisted ingest',
  async run(context) {
    const { repetitions, persistence } = context.sizes;
    const workload = context.simulatedPayloads();
    const filter = serviceDecodeOptions();
    const loadGenerator = context.loadGenerator();
    await loadGenerator.load(context.payloadFile(workload));

    inMemoryPass(workload.bodies.slice(0, WARMUP_REQUESTS), undefined);
    inMemoryPass(workload.bodies.slice(0, WARMUP_REQUESTS), filter);
    await persistedPass(context, WARMUP_REQUESTS);

    const full: number[] = [];
    const filtered: number[] = [];
    const persisted: number[] = [];
    const cpuShares: number[] = [];
    const senderCpuShares: number[] = [];
    let expectedIds: string[] | undefined;
    let sameFindings = true;
    let everySpanCommitted = true;
    for (let i = 0; i < repetitions; i++) {
      const inMemory = inMemoryPass(workload.bodies, undefined);
      const inMemoryFiltered = inMemoryPass(workload.bodies, filter);
      const stored = await persistedPass(context, workload.bodies.length);
      expectedIds ??= inMemory.findingIds;
      sameFindings &&=
        sameIds(expectedIds, inMemory.findingIds) &&
        sameIds(expectedIds, inMemoryFiltered.findingIds) &&
        sameIds(expectedIds, stored.findingIds);
      everySpanCommitted &&= stored.spansConsumed === workload.spans && stored.allAnswered200;
      full.push(workload.spans / inMemory.seconds);
      filtered.push(workload.spans / inMemoryFiltered.seconds);
      persisted.push(workload.spans / stored.seconds);
      cpuShares.push(stored.cpuSeconds / stored.seconds);
      senderCpuShares.push(stored.senderCpuSeconds / stored.seconds);
    }

    const findings = expectedIds?.length ?? 0;
    const rows: Row[] = [
      {
        section: 'persisted ingest',
        measurement: 'in memory: decode (all attributes) + attempts + detector',
        value: median(full),
        unit: 'spans/s',
        samples: full,
        note:
          `the simulator's benchmark scenario: ${workload.spans} spans (~20% mutation attempts) in ` +
          `${workload.bodies.length} payloads of 512 spans, per repetition; ${repetitions} repetitions, ` +
          `${workload.spans * repetitions} spans through each path. In memory: one thread, no HTTP, no SQLite`,
      },
      {
        section: 'persisted ingest',
        measurement: 'in memory: decode (service filter) + attempts + detector',
        value: median(filtered),
        unit: 'spans/s',
        ratio: { value: pairedRatio(filtered, full), against: 'all attributes' },
        samples: filtered,
      },
      {
        section: 'persisted ingest',
        measurement: 'OTLP/HTTP → DetectionPipeline → SQLite, committed',
        value: median(persisted),
        unit: 'spans/s',
        target: { comparison: '>=', bound: PERSISTED_TARGET_SPANS_PER_SECOND },
        ratio: { value: pairedRatio(persisted, filtered), against: 'in memory (filter)' },
        check: {
          ok: sameFindings && everySpanCommitted,
          what: `same ${findings} finding ids as in memory${everySpanCommitted ? '' : '; spans missing'}`,
        },
        samples: persisted,
        note:
          `${persistence.connections} keep-alive connections from the load generator's process; receivers and ` +
          'pipeline in this process, a fresh SQLite file (WAL) per repetition under the OS temp directory; ' +
          "spans / time from first request to last answer; the receivers decode with the pipeline's " +
          `decodeOptions. This process used ${median(cpuShares).toFixed(2)} cores meanwhile (median): ` +
          `${Math.round(median(persisted.map((rate, i) => rate / cpuShares[i]!))).toLocaleString('en-US')} ` +
          `spans per CPU-second; the load generator's process used ${median(senderCpuShares).toFixed(2)} cores`,
      },
    ];
    return rows;
  },
};

interface InMemoryPass {
  seconds: number;
  findingIds: string[];
}

function inMemoryPass(bodies: readonly Uint8Array[], decodeOptions: DecodeOptions | undefined): InMemoryPass {
  const mapping = defaultMapping();
  const deduplicator = createSpanDeduplicator({ maxEntries: PIPELINE_DEDUPLICATOR_ENTRIES });
  const detector = createDetector();
  const seconds = secondsOf(() => {
    for (const body of bodies) {
      detector.ingest(extractAttempts(decodeTraces(body, decodeOptions), mapping, deduplicator));
    }
  });
  return { seconds, findingIds: detector.findings().map((finding) => finding.id) };
}

interface PersistedPass {
  seconds: number;
  cpuSeconds: number;
  senderCpuSeconds: number;
  spansConsumed: number;
  allAnswered200: boolean;
  findingIds: string[];
}

async function persistedPass(context: BenchContext, requests: number): Promise<PersistedPass> {
  const dir = context.freshDir('sqlite');
  const { pipeline, store } = createPersistedPipeline(join(dir, 'keyscope.db'));
  try {
    const receivers = await startLoopbackReceivers(pipeline, pipeline.decodeOptions);
    let result: LoadResult;
    let cpuSeconds: number;
    try {
      const cpu = process.cpuUsage();
      result = await context
        .loadGenerator()
        .run(receivers.tracesUrl, requests, context.sizes.persistence.connections);
      cpuSeconds = cpuSecondsSince(cpu);
    } finally {
      await receivers.stop();
    }
    const findingIds = store.db.prepare('SELECT id FROM findings').pluck().all() as string[];
    return {
      seconds: result.elapsedMillis / 1000,
      cpuSeconds,
      senderCpuSeconds: result.cpuMillis / 1000,
      spansConsumed: pipeline.counts().spans,
      allAnswered200: result.ok === result.requests,
      findingIds,
    };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((id) => set.has(id));
}
