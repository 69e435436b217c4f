import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Finding } from '@keyscope/detector';
import type { DecodeOptions } from '@keyscope/otlp';
import BetterSqlite3 from 'better-sqlite3';
import type { BenchContext } from '../bench-context.ts';
import { cpuAffinity } from '../cpu-affinity.ts';
import { detectInMemory } from '../in-memory-detection.ts';
import type { LoadResult } from '../load-generator.ts';
import { median, pairedRatio } from '../measure.ts';
import type { Section } from '../section.ts';
import { ServiceProcess, type StoppedService } from '../service-process-handle.ts';
import type { Row } from '../table.ts';
import type { EncodedPayloads } from '../workloads/encoded-payloads.ts';

const PERSISTED_TARGET_SPANS_PER_SECOND = 300_000;
/**
 * Untimed passes over the whole workload that warm every path up first: a service runs for hours,
 * and the first pass of a fresh process runs at about half its later pace. In one process the rise
 * goes on for longer (over 24 passes of 200,000 spans through one process, spans per CPU-second
 * rose from 125k to 300k–365k), but in five alternations of this section with four and with twelve
 * warm-up passes the pinned row followed the machine's phase, not the warm-up (medians 313k and
 * 315k spans/s). The note gives every warm-up pass's rate.
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
 *   transaction committed. Three times, taking turns: with `connections` concurrent requests (a
 *   Collector's exporter sends with 10 by default), with `fewerConnections` (4, as this section ran
 *   before), and with `connections` again while every thread of the service's process is pinned
 *   to one CPU and the load generator's to the others (cpu-affinity.ts): the target's "on one
 *   core". The pinned runs take turns on the machine's CPUs, each after the in-memory path (filter)
 *   ran pinned to the same CPU, for the ratio of the two.
 *   Unpinned, V8's helper threads (parallel scavenges, concurrent marking) and the checkpoint
 *   thread run beside the event loop on either core. A request waits for the group commit it
 *   joined, so how many are in flight sets how many payloads share a commit and whether the service
 *   ever waits for the next request.
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

/** One way the section runs the service: concurrent requests, and whether it is pinned to one CPU. */
interface Setup {
  connections: number;
  pinned: boolean;
}

async function measure(
  context: BenchContext,
  workload: EncodedPayloads,
  filter: DecodeOptions,
  service: ServiceProcess,
): Promise<Row[]> {
  const { repetitions, persistence } = context.sizes;
  const canPin = cpuAffinity.available();
  const wide: Setup = { connections: persistence.connections, pinned: false };
  const narrow: Setup = { connections: persistence.fewerConnections, pinned: false };
  const oneCore: Setup = { connections: persistence.connections, pinned: true };
  const setups = canPin ? [wide, narrow, oneCore] : [wide, narrow];

  // A pinned repetition runs once on each of the machine's CPUs, which goes first rotating: a
  // shared VM's CPUs do not keep one pace (see the pinned row's note), and a row held to one of
  // them would measure that CPU.
  const cpus = cpuAffinity.cpus();
  const cpusOf = (setup: Setup, turn: number): (number | undefined)[] =>
    setup.pinned ? cpus.map((_, k) => cpus[(turn + k) % cpus.length]) : [undefined];

  const warmupRates: number[] = [];
  for (let pass = 0; pass < WARMUP_PASSES; pass++) {
    detectInMemory(workload, workload.bodies.length, undefined);
    detectInMemory(workload, workload.bodies.length, filter);
    const setup = setups[pass % setups.length]!;
    const warming = await persistedPass(context, workload, service, setup, cpusOf(setup, pass)[0]);
    warmupRates.push(workload.spans / warming.seconds);
  }

  const full: number[] = [];
  const filtered: number[] = [];
  const runs = new Map<Setup, PersistedPass[]>(setups.map((setup) => [setup, []]));
  /** Per pinned run: the in-memory path (filter), run just before it pinned to the same CPU. */
  const sameCpuInMemory: number[] = [];
  let expectedIds: string[] | undefined;
  let sameFindings = true;
  let everySpanCommitted = true;
  for (let i = 0; i < repetitions; i++) {
    const inMemory = detectInMemory(workload, workload.bodies.length, undefined);
    const inMemoryFiltered = detectInMemory(workload, workload.bodies.length, filter);
    expectedIds ??= idsOf(inMemory.findings);
    sameFindings &&=
      sameIds(expectedIds, idsOf(inMemory.findings)) &&
      sameIds(expectedIds, idsOf(inMemoryFiltered.findings));
    // Which setup goes first rotates, so none always follows another.
    for (let k = 0; k < setups.length; k++) {
      const setup = setups[(i + k) % setups.length]!;
      for (const cpu of cpusOf(setup, i)) {
        if (cpu !== undefined) sameCpuInMemory.push(inMemoryOn(cpu, workload, filter));
        const run = await persistedPass(context, workload, service, setup, cpu);
        runs.get(setup)!.push(run);
        sameFindings &&= sameIds(expectedIds, run.findingIds);
        everySpanCommitted &&= run.spansConsumed === workload.spans && run.allAnswered200;
      }
    }
    full.push(workload.spans / inMemory.seconds);
    filtered.push(workload.spans / inMemoryFiltered.seconds);
  }

  const rate = (setup: Setup) => runs.get(setup)!.map((run) => workload.spans / run.seconds);
  const cores = (setup: Setup) => median(runs.get(setup)!.map((run) => run.cpuSeconds / run.seconds));
  const persisted = rate(wide);
  const fewer = rate(narrow);
  const findings = expectedIds?.length ?? 0;
  const spansPerCpuSecond = (setup: Setup) =>
    Math.round(median(runs.get(setup)!.map((run) => workload.spans / run.cpuSeconds))).toLocaleString(
      'en-US',
    );
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
        'SQLite, a fresh detector per repetition',
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
        "at the workload's last span, started (its WAL checkpoint thread up) before the load begins; spans / " +
        '(time from first request to last answer + the CPU time of checkpointing what they wrote into the ' +
        "database file, which a running service's checkpoint thread spends within a second and a run " +
        `ends before: ${Math.round(1000 * median(runs.get(wide)!.map((run) => run.checkpointCpuSeconds)))} ms ` +
        'per repetition, median). That process used ' +
        `${cores(wide).toFixed(2)} cores meanwhile (median): ${spansPerCpuSecond(wide)} spans per ` +
        `CPU-second; the load generator's process used ` +
        `${median(runs.get(wide)!.map((run) => run.senderCpuSeconds / run.seconds)).toFixed(2)} cores. ` +
        `After ${WARMUP_PASSES} untimed passes taking the same turns, at ` +
        `${warmupRates.map((r) => `${Math.round(r / 1000)}k`).join(', ')} spans/s (the first in a fresh process)`,
    },
    {
      section: 'persisted ingest',
      measurement: `same, ${persistence.fewerConnections} connections`,
      value: median(fewer),
      unit: 'spans/s',
      ratio: { value: pairedRatio(fewer, persisted), against: `${persistence.connections} connections` },
      samples: fewer,
      note:
        `taking turns with the row above, on the same service process. That process used ${cores(narrow).toFixed(2)} cores meanwhile (median): ` +
        `${spansPerCpuSecond(narrow)} spans per CPU-second`,
    },
  ];
  if (canPin) {
    const pinnedRuns = runs.get(oneCore)!;
    const pinned = rate(oneCore);
    const thousands = (value: number) => `${Math.round(value / 1000)}k`;
    const unpinnedRatio = pairedRatio(
      pinned,
      // Pinned run j is repetition j / cpus.length's: each repetition pins once per CPU.
      pinned.map((_, j) => persisted[Math.floor(j / cpus.length)]!),
    );
    rows.push({
      section: 'persisted ingest',
      measurement: 'same, the service pinned to one core',
      value: median(pinned),
      unit: 'spans/s',
      target: { comparison: '>=', bound: PERSISTED_TARGET_SPANS_PER_SECOND },
      ratio: { value: pairedRatio(pinned, sameCpuInMemory), against: 'in memory (filter), same CPU' },
      samples: pinned,
      note:
        `${persistence.connections} connections, taking turns with the rows above on the same service process, ` +
        "every thread of which (event loop, V8's helpers, the checkpoint thread) is pinned to one CPU " +
        'with taskset for the run, the load generator\'s to the others: the target\'s "on one core". ' +
        `That process used ${cores(oneCore).toFixed(2)} cores meanwhile (median); ` +
        `${unpinnedRatio.toFixed(3)}× unpinned (paired). Each repetition runs pinned once on each of ` +
        `the machine's ${cpus.length} CPUs (${pinned.length} runs), and just before each run the ` +
        'in-memory path (filter) runs pinned to the same CPU: ' +
        "a shared VM's CPUs do not keep one pace (the same decoding loop has run 1.6× " +
        'slower on one CPU than on the other at the same minute, and minutes later the other way ' +
        'round), and the ratio to that run tells the code from the CPU. Medians per CPU: ' +
        cpus
          .map((cpu) => {
            const on = pinnedRuns.flatMap((run, i) => (run.cpu === cpu ? [i] : []));
            return (
              `CPU ${cpu} ${thousands(median(on.map((i) => pinned[i]!)))} ` +
              `(in memory ${thousands(median(on.map((i) => sameCpuInMemory[i]!)))})`
            );
          })
          .join(', ') +
        '. Its runs, in order: ' +
        pinnedRuns
          .map(
            (run, i) =>
              `${thousands(pinned[i]!)} on CPU ${run.cpu} (in memory ${thousands(sameCpuInMemory[i]!)})`,
          )
          .join(', ') +
        ' spans/s',
    });
  } else {
    rows.push({
      section: 'persisted ingest',
      measurement: 'same, the service pinned to one core',
      value: 0,
      unit: 'spans/s',
      target: { comparison: '>=', bound: PERSISTED_TARGET_SPANS_PER_SECOND },
      note: 'not measured: pinning needs two CPUs and util-linux taskset, which this machine lacks',
    });
  }
  return rows;
}

interface PersistedPass {
  /** The CPU the service was pinned to, if it was. */
  cpu: number | undefined;
  /** From the first request to the last answer, plus `checkpointCpuSeconds`. */
  seconds: number;
  cpuSeconds: number;
  /** CPU time of checkpointing, after the run, what the run left in the WAL. */
  checkpointCpuSeconds: number;
  senderCpuSeconds: number;
  spansConsumed: number;
  allAnswered200: boolean;
  findingIds: string[];
}

async function persistedPass(
  context: BenchContext,
  workload: EncodedPayloads,
  service: ServiceProcess,
  setup: Setup,
  cpu: number | undefined,
): Promise<PersistedPass> {
  const dir = context.freshDir('sqlite');
  const dbPath = join(dir, 'keyscope.db');
  const loadGenerator = context.loadGenerator();
  try {
    const tracesUrl = await service.startService(dbPath, workload.endUnixMillis);
    let result: LoadResult;
    let stopped: StoppedService | undefined;
    try {
      if (cpu !== undefined) {
        cpuAffinity.pin(service.pid, String(cpu));
        cpuAffinity.pin(loadGenerator.pid, cpuAffinity.othersThan(cpu));
      }
      await service.startMeasuring();
      result = await loadGenerator.run(tracesUrl, workload.bodies.length, setup.connections);
    } finally {
      stopped = await service.stopService();
      if (cpu !== undefined) {
        cpuAffinity.pin(service.pid, cpuAffinity.all());
        cpuAffinity.pin(loadGenerator.pid, cpuAffinity.all());
      }
    }
    return {
      cpu,
      // The run's own time, and the core time a running service's checkpoint thread would take
      // from it within a second to copy what the run wrote into the database file.
      seconds: result.elapsedMillis / 1000 + stopped.checkpointCpuSeconds,
      // From just before the first request to the stop: a few milliseconds (two IPC messages) more
      // than the run.
      cpuSeconds: stopped.cpuSeconds + stopped.checkpointCpuSeconds,
      checkpointCpuSeconds: stopped.checkpointCpuSeconds,
      senderCpuSeconds: result.cpuMillis / 1000,
      spansConsumed: stopped.spans,
      allAnswered200: result.ok === result.requests,
      findingIds: committedFindingIds(dbPath),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Spans per second of the in-memory path (filter), this process pinned to `cpu` meanwhile. */
function inMemoryOn(cpu: number, workload: EncodedPayloads, filter: DecodeOptions): number {
  cpuAffinity.pin(process.pid, String(cpu));
  try {
    return workload.spans / detectInMemory(workload, workload.bodies.length, filter).seconds;
  } finally {
    cpuAffinity.pin(process.pid, cpuAffinity.all());
  }
}

/** Finding ids in the database once the service has stopped: what a restart would find. */
function committedFindingIds(dbPath: string): string[] {
  const db = new BetterSqlite3(dbPath);
  try {
    return db.prepare('SELECT id FROM findings').pluck().all() as string[];
  } finally {
    db.close();
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
