import type { ChildProcess } from 'node:child_process';
import type { BenchSizes } from '../bench-sizes.ts';
import { cpuAffinity } from '../cpu-affinity.ts';
import { forkTypeScript, nextMessage } from '../fork-typescript.ts';
import { median, pairedRatio } from '../measure.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';
import type { PaceReply, PaceRequest } from './detector-pace-process.ts';
import type { DetectorProcessReply } from './detector-process.ts';

const MEMORY_TARGET_BYTES_PER_KEY = 200;
const LATENCY_TARGET_P99_MILLIS = 50;
/**
 * Pairs of samples per repetition beside a baseline checkout: a sample is under a second, and a
 * process's pace still moves by up to 2× from sample to sample, which a ratio's median over more
 * pairs reads through.
 */
const PAIRS_PER_REPETITION = 3;

/** The detector on its own: throughput, memory per tracked key, second execution → finding. */
export const detectorSection: Section = {
  name: 'detector',
  async run(context) {
    const { sizes } = context;
    const child = forkTypeScript(new URL('./detector-process.ts', import.meta.url), { exposeGc: true });
    const replied = nextMessage<DetectorProcessReply>(child);
    child.send(sizes);
    const reply = await replied;
    if (reply.type !== 'measured') throw new Error(`detector process: ${reply.message}`);
    const m = reply.measurements;
    const rows: Row[] = [
      {
        section: 'detector',
        measurement: 'ingest throughput',
        value: median(m.attemptsPerSecond),
        unit: 'attempts/s',
        samples: m.attemptsPerSecond,
        note:
          `createDetector() with defaults (in-memory attempt log); ${m.attempts} attempts extracted beforehand ` +
          `from ${sizes.detector.streamSpans} simulated spans, ingested one 512-span payload at a time ` +
          `(${m.batches} calls), fresh detector per repetition. The process used ` +
          `${median(m.cpuShares).toFixed(2)} cores meanwhile (median); latencies below are wall-clock ` +
          'and grow when the core is shared',
      },
      {
        section: 'detector',
        measurement: 'memory per tracked key',
        value: median(m.bytesPerKey),
        unit: 'bytes',
        target: { comparison: '<=', bound: MEMORY_TARGET_BYTES_PER_KEY },
        check: {
          ok: m.keysInMemory === sizes.detector.memoryKeys,
          what: `${m.keysInMemory} keys in memory`,
        },
        samples: m.bytesPerKey,
        note:
          'heap used plus ArrayBuffers after gc, before and after ingesting the keys, / keys in memory; keys copy the ' +
          "simulated keys' attempts under fresh names; the attempt log kept nothing (the service keeps it " +
          'in SQLite, off the JS heap)',
      },
      {
        section: 'detector',
        measurement: 'memory per node of the routing window',
        value: median(m.windowBytesPerNode) / 2 ** 20,
        unit: 'MiB',
        samples: m.windowBytesPerNode.map((bytes) => bytes / 2 ** 20),
        note:
          `heap used plus ArrayBuffers after gc, before and after ${sizes.detector.windowSeconds} s of activity of ` +
          `${sizes.detector.windowNodes} nodes of one service (every second, 20 spans with a latency histogram), / nodes: ` +
          'what each node sending to keyscope costs once its activity fills the two-hour routing window',
      },
      {
        section: 'detector',
        measurement: 'second execution → finding, p50',
        value: median(m.latencyP50Millis),
        unit: 'ms',
        samples: m.latencyP50Millis,
      },
      {
        section: 'detector',
        measurement: 'second execution → finding, p99',
        value: median(m.latencyP99Millis),
        unit: 'ms',
        target: { comparison: '<=', bound: LATENCY_TARGET_P99_MILLIS },
        check: {
          ok: m.neverFound === 0 && m.secondExecutions > 0,
          what: `${m.foundInSameCall}/${m.secondExecutions} found by the ingest call delivering them`,
        },
        samples: m.latencyP99Millis,
        note:
          "duration of the ingest call that delivered a key's second execution at one dedup tier (plus any " +
          'later calls until a duplicate finding of the key came out); per-repetition percentiles, median ' +
          'over repetitions. Excludes decode and extraction (see the persisted section)',
      },
    ];
    if (context.detectorBaseline !== undefined)
      rows.push(await pairedWithBaseline(context.detectorBaseline, sizes));
    return rows;
  },
};

/**
 * This checkout's detector and another checkout's (`--detector-baseline DIR`) on the same stream,
 * each in a process of its own, taking turns sample by sample: the ratio says whether a change made
 * the detector faster or slower, with both sides under the same load.
 */
async function pairedWithBaseline(checkout: string, sizes: BenchSizes): Promise<Row> {
  const oursPace = await startPace(sizes, undefined);
  const ours = oursPace.child;
  const theirs = (
    await startPace(sizes, checkout).catch((error: Error) => {
      ours.kill();
      throw error;
    })
  ).child;
  const { warmupPasses, passesPerSample } = oursPace.ready;
  try {
    const oursRates: number[] = [];
    const theirsRates: number[] = [];
    const cpus = cpuAffinity.available() ? cpuAffinity.cpus() : [];
    for (let i = 0; i < PAIRS_PER_REPETITION * sizes.repetitions; i++) {
      // Both of a pair on one CPU (this VM's CPUs do not keep one pace; see the persisted section),
      // each CPU in turn; who goes first alternates, so neither always runs on a core the other just warmed.
      if (cpus.length > 0) {
        const cpu = String(cpus[i % cpus.length]);
        for (const child of [ours, theirs]) cpuAffinity.pin(child.pid!, cpu);
      }
      const order = i % 2 === 0 ? [ours, theirs] : [theirs, ours];
      for (const child of order) (child === ours ? oursRates : theirsRates).push(await pass(child));
    }
    return {
      section: 'detector',
      measurement: 'ingest throughput beside a baseline checkout',
      value: median(oursRates),
      unit: 'attempts/s',
      ratio: { value: pairedRatio(oursRates, theirsRates), against: 'baseline checkout, same stream' },
      target: { comparison: '>=', bound: 1, on: 'ratio' },
      samples: oursRates,
      note:
        `this checkout's createDetector() and ${checkout}'s, each in a process of its own, taking turns on this ` +
        `checkout's stream (same attempts, same batches), both of a pair pinned to one CPU${cpus.length > 0 ? '' : ' (taskset unavailable: unpinned)'}, ` +
        `a sample ${passesPerSample} passes after ${warmupPasses} untimed ones; baseline median ${Math.round(median(theirsRates))} ` +
        `attempts/s, its samples ${theirsRates.map((rate) => `${Math.round(rate / 1000)}k`).join(' ')}`,
    };
  } finally {
    ours.kill();
    theirs.kill();
  }
}

interface Pace {
  child: ChildProcess;
  ready: Extract<PaceReply, { type: 'ready' }>;
}

async function startPace(sizes: BenchSizes, checkout: string | undefined): Promise<Pace> {
  const child = forkTypeScript(new URL('./detector-pace-process.ts', import.meta.url));
  const reply = await ask(child, { type: 'start', sizes, checkout });
  if (reply.type !== 'ready') {
    child.kill();
    throw new Error(`detector pace process (${checkout ?? 'this checkout'}): ${failure(reply)}`);
  }
  return { child, ready: reply };
}

async function pass(child: ChildProcess): Promise<number> {
  const reply = await ask(child, { type: 'pass' });
  if (reply.type !== 'passed') throw new Error(`detector pace process: ${failure(reply)}`);
  return reply.attemptsPerSecond;
}

function ask(child: ChildProcess, request: PaceRequest): Promise<PaceReply> {
  const replied = nextMessage<PaceReply>(child);
  child.send(request);
  return replied;
}

function failure(reply: PaceReply): string {
  return reply.type === 'failed' ? reply.message : `unexpected ${reply.type}`;
}
