import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Finding } from '@keyscope/detector';
import type { DecodeOptions } from '@keyscope/otlp';
import { KeyscopeStore } from '@keyscope/store';
import type { BenchContext } from '../bench-context.ts';
import { detectInMemory } from '../in-memory-detection.ts';
import type { LoadResult } from '../load-generator.ts';
import { median, pairedRatio } from '../measure.ts';
import type { Section } from '../section.ts';
import { ServiceProcess } from '../service-process-handle.ts';
import type { Row } from '../table.ts';
import type { EncodedPayloads } from '../workloads/encoded-payloads.ts';

const PERSISTED_TARGET_SPANS_PER_SECOND = 300_000;
/**
 * Untimed passes over the whole workload that warm every path up first. A service runs for hours;
 * a fresh process takes about a million spans to reach its pace (measured here: persisted passes in
 * a new process went 132k → 161k → 171k → 181k → 190k → 206k → 222k → 231k → 243k spans/s; the
 * CPU profiles of the first and the ninth differ in functions not yet inlined, and the load
 * generator's own CPU per pass fell from 290 to 100 ms). The note gives the first pass's rate.
 */
const WARMUP_PASSES = 4;

/**
 * End-to-end ingest with persistence, next to the same work in memory. Every repetition runs, on
 * the simulator's benchmark workload:
 * - in memory: decode → extract attempts → detector, in this process, no HTTP, no SQLite; once
 *   decoding every attribute, once with the service's attribute filter (as its receivers decode);
 * - persisted: the load generator posts every payload over OTLP/HTTP to the embedded service
 *   (`keyscope serve`'s receivers, detection pipeline, API, alerts and timers) in a process of its
 *   own (service-process.ts), on a fresh SQLite file; each request is answered after its
 *   transaction committed. Twice, taking turns: with `connections` concurrent requests (a
 *   Collector's exporter sends with 10 by default) and with `fewerConnections` (4, as this section
 *   ran before). A request waits for the group commit it joined, so how many are in flight sets how
 *   many payloads share a commit and whether the service ever waits for the next request.
 * The persisted runs must end with the same finding ids in SQLite as the in-memory detector holds.
 */
export const persistenceSection: Section = {
  name: 'persisted ingest',
  async run(context) {
    const workload = context.simulatedPayloads();
    const filter = await context.serviceDecodeOptions();
    const loadGenerator = context.loadGenerator();
    await loadGenerator.load(context.payloadFile(workload));
    const service = ServiceProcess.start();
    try {
      return await measure(context, workload, filter, service);
    } finally {
      service.stop();
    }
  },
};

async function measure(
  context: BenchContext,
  workload: EncodedPayloads,
  filter: DecodeOptions,
  service: ServiceProcess,
): Promise<Row[]> {
  const { repetitions, persistence } = context.sizes;
  let coldRate = 0;
  for (let pass = 0; pass < WARMUP_PASSES; pass++) {
    detectInMemory(workload, workload.bodies.length, undefined);
    detectInMemory(workload, workload.bodies.length, filter);
    const connections = pass % 2 === 0 ? persistence.connections : persistence.fewerConnections;
    const warming = await persistedPass(context, workload, service, connections);
    if (pass === 0) coldRate = workload.spans / warming.seconds;
  }

  const full: number[] = [];
  const filtered: number[] = [];
  const persisted: number[] = [];
  const cpuShares: number[] = [];
  const senderCpuShares: number[] = [];
  const fewer: number[] = [];
  const fewerCpuShares: number[] = [];
  let expectedIds: string[] | undefined;
  let sameFindings = true;
  let everySpanCommitted = true;
  for (let i = 0; i < repetitions; i++) {
    const inMemory = detectInMemory(workload, workload.bodies.length, undefined);
    const inMemoryFiltered = detectInMemory(workload, workload.bodies.length, filter);
    // Which concurrency goes first alternates, so neither always follows the other.
    const first = i % 2 === 0 ? persistence.connections : persistence.fewerConnections;
    const second = i % 2 === 0 ? persistence.fewerConnections : persistence.connections;
    const runs = new Map<number, PersistedPass>();
    runs.set(first, await persistedPass(context, workload, service, first));
    runs.set(second, await persistedPass(context, workload, service, second));
    const stored = runs.get(persistence.connections)!;
    const storedFewer = runs.get(persistence.fewerConnections)!;
    expectedIds ??= idsOf(inMemory.findings);
    sameFindings &&=
      sameIds(expectedIds, idsOf(inMemory.findings)) &&
      sameIds(expectedIds, idsOf(inMemoryFiltered.findings)) &&
      sameIds(expectedIds, stored.findingIds) &&
      sameIds(expectedIds, storedFewer.findingIds);
    for (const run of runs.values()) {
      everySpanCommitted &&= run.spansConsumed === workload.spans && run.allAnswered200;
    }
    full.push(workload.spans / inMemory.seconds);
    filtered.push(workload.spans / inMemoryFiltered.seconds);
    persisted.push(workload.spans / stored.seconds);
    cpuShares.push(stored.cpuSeconds / stored.seconds);
    senderCpuShares.push(stored.senderCpuSeconds / stored.seconds);
    fewer.push(workload.spans / storedFewer.seconds);
    fewerCpuShares.push(storedFewer.cpuSeconds / storedFewer.seconds);
  }

  const findings = expectedIds?.length ?? 0;
  const perCpuSecond = median(persisted.map((rate, i) => rate / cpuShares[i]!));
  const fewerPerCpuSecond = median(fewer.map((rate, i) => rate / fewerCpuShares[i]!));
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
        `${persistence.connections} keep-alive connections (the OpenTelemetry Collector's exporters send with ` +
        "sending_queue.num_consumers = 10 by default) from the load generator's process to startServe() " +
        "in the service's own process, a fresh SQLite file (WAL) per repetition under the OS temp directory, its clock " +
        "at the workload's last span; spans / time from first request to last answer. That process used " +
        `${median(cpuShares).toFixed(2)} cores meanwhile (median): ` +
        `${Math.round(perCpuSecond).toLocaleString('en-US')} spans per CPU-second; the load generator's ` +
        `process used ${median(senderCpuShares).toFixed(2)} cores. After ${WARMUP_PASSES} untimed passes: the first, ` +
        `in a fresh process, ran at ${Math.round(coldRate).toLocaleString('en-US')} spans/s`,
    },
    {
      section: 'persisted ingest',
      measurement: `same, ${persistence.fewerConnections} connections`,
      value: median(fewer),
      unit: 'spans/s',
      ratio: { value: pairedRatio(fewer, persisted), against: `${persistence.connections} connections` },
      samples: fewer,
      note:
        `taking turns with the row above, on the same service process; this section's only concurrency ` +
        `until session 5. That process used ${median(fewerCpuShares).toFixed(2)} cores meanwhile (median): ` +
        `${Math.round(fewerPerCpuSecond).toLocaleString('en-US')} spans per CPU-second`,
    },
  ];
  return rows;
}

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
  service: ServiceProcess,
  connections: number,
): Promise<PersistedPass> {
  const dir = context.freshDir('sqlite');
  const dbPath = join(dir, 'keyscope.db');
  try {
    const tracesUrl = await service.startService(dbPath, workload.endUnixMillis);
    let result: LoadResult;
    let stopped: { spans: number; cpuSeconds: number } | undefined;
    try {
      result = await context.loadGenerator().run(tracesUrl, workload.bodies.length, connections);
    } finally {
      stopped = await service.stopService();
    }
    return {
      seconds: result.elapsedMillis / 1000,
      // From the service's start to its stop, a few milliseconds more than the run.
      cpuSeconds: stopped.cpuSeconds,
      senderCpuSeconds: result.cpuMillis / 1000,
      spansConsumed: stopped.spans,
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
