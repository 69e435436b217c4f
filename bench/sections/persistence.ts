import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Finding } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import type { BenchContext } from '../bench-context.ts';
import { detectInMemory } from '../in-memory-detection.ts';
import { startEmbeddedService } from '../in-process-service.ts';
import type { LoadResult } from '../load-generator.ts';
import { cpuSecondsSince, median, pairedRatio } from '../measure.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';
import type { EncodedPayloads } from '../workloads/encoded-payloads.ts';

const PERSISTED_TARGET_SPANS_PER_SECOND = 300_000;
/** Payloads of the untimed runs that warm both paths up. */
const WARMUP_PAYLOADS = 20;

/**
 * End-to-end ingest with persistence, next to the same work in memory. Every repetition runs, on
 * the simulator's benchmark workload:
 * - in memory: decode → extract attempts → detector, in this process, no HTTP, no SQLite; once
 *   decoding every attribute, once with the service's attribute filter (as its receivers decode);
 * - persisted: the load generator posts every payload over OTLP/HTTP to the embedded service
 *   (`keyscope serve`'s receivers, detection pipeline, API, alerts and timers) in this process, on
 *   a fresh SQLite file; each request is answered after its transaction committed.
 * The persisted run must end with the same finding ids in SQLite as the in-memory detector holds.
 */
export const persistenceSection: Section = {
  name: 'persisted ingest',
  async run(context) {
    const { repetitions, persistence } = context.sizes;
    const workload = context.simulatedPayloads();
    const filter = await context.serviceDecodeOptions();
    const loadGenerator = context.loadGenerator();
    await loadGenerator.load(context.payloadFile(workload));

    detectInMemory(workload, WARMUP_PAYLOADS, undefined);
    detectInMemory(workload, WARMUP_PAYLOADS, filter);
    await persistedPass(context, workload, WARMUP_PAYLOADS);

    const full: number[] = [];
    const filtered: number[] = [];
    const persisted: number[] = [];
    const cpuShares: number[] = [];
    const senderCpuShares: number[] = [];
    let expectedIds: string[] | undefined;
    let sameFindings = true;
    let everySpanCommitted = true;
    for (let i = 0; i < repetitions; i++) {
      const inMemory = detectInMemory(workload, workload.bodies.length, undefined);
      const inMemoryFiltered = detectInMemory(workload, workload.bodies.length, filter);
      const stored = await persistedPass(context, workload, workload.bodies.length);
      expectedIds ??= idsOf(inMemory.findings);
      sameFindings &&=
        sameIds(expectedIds, idsOf(inMemory.findings)) &&
        sameIds(expectedIds, idsOf(inMemoryFiltered.findings)) &&
        sameIds(expectedIds, stored.findingIds);
      everySpanCommitted &&= stored.spansConsumed === workload.spans && stored.allAnswered200;
      full.push(workload.spans / inMemory.seconds);
      filtered.push(workload.spans / inMemoryFiltered.seconds);
      persisted.push(workload.spans / stored.seconds);
      cpuShares.push(stored.cpuSeconds / stored.seconds);
      senderCpuShares.push(stored.senderCpuSeconds / stored.seconds);
    }

    const findings = expectedIds?.length ?? 0;
    const perCpuSecond = median(persisted.map((rate, i) => rate / cpuShares[i]!));
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
          `${workload.spans * repetitions} spans through each path. In memory: one thread, no HTTP, no ` +
          'SQLite, a fresh deduplicator and detector per repetition',
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
        measurement: 'OTLP/HTTP → embedded service → SQLite, committed',
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
          `${persistence.connections} keep-alive connections from the load generator's process to startServe() ` +
          'in this process, a fresh SQLite file (WAL) per repetition under the OS temp directory, its clock ' +
          "at the workload's last span; spans / time from first request to last answer. This process used " +
          `${median(cpuShares).toFixed(2)} cores meanwhile (median): ` +
          `${Math.round(perCpuSecond).toLocaleString('en-US')} spans per CPU-second; the load generator's ` +
          `process used ${median(senderCpuShares).toFixed(2)} cores`,
      },
    ];
    return rows;
  },
};

interface PersistedPass {
  seconds: number;
  cpuSeconds: number;
  senderCpuSeconds: number;
  spansConsumed: number;
  allAnswered200: boolean;
  findingIds: string[];
}

async function persistedPass(
  context: BenchContext,
  workload: EncodedPayloads,
  payloads: number,
): Promise<PersistedPass> {
  const dir = context.freshDir('sqlite');
  const dbPath = join(dir, 'keyscope.db');
  try {
    const embedded = await startEmbeddedService(dbPath, () => workload.endUnixMillis);
    let result: LoadResult;
    let cpuSeconds: number;
    let spansConsumed: number;
    try {
      const cpu = process.cpuUsage();
      result = await context
        .loadGenerator()
        .run(embedded.tracesUrl, payloads, context.sizes.persistence.connections);
      cpuSeconds = cpuSecondsSince(cpu);
      spansConsumed = embedded.service.pipeline.counts().spans;
    } finally {
      await embedded.stop();
    }
    return {
      seconds: result.elapsedMillis / 1000,
      cpuSeconds,
      senderCpuSeconds: result.cpuMillis / 1000,
      spansConsumed,
      allAnswered200: result.ok === result.requests,
      findingIds: committedFindingIds(dbPath),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Finding ids in the database once the service has stopped: what a restart would find. */
function committedFindingIds(dbPath: string): string[] {
  const store = new KeyscopeStore({ path: dbPath });
  try {
    return store.db.prepare('SELECT id FROM findings').pluck().all() as string[];
  } finally {
    store.close();
  }
}

function idsOf(findings: readonly Finding[]): string[] {
  return findings.map((finding) => finding.id);
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((id) => set.has(id));
}
