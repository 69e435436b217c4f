import { forkTypeScript, nextMessage } from '../fork-typescript.ts';
import { median } from '../measure.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';
import type { DetectorProcessReply } from './detector-process.ts';

const MEMORY_TARGET_BYTES_PER_KEY = 200;
const LATENCY_TARGET_P99_MILLIS = 50;

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
    return rows;
  },
};
