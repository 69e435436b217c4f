import { defaultMapping, extractAttempts, mappingDecodeOptions } from '@keyscope/attempts';
import { decodeTraces } from '@keyscope/otlp';
import { detectInMemory } from '../in-memory-detection.ts';
import {
  ATTEMPTS_PARTITIONS,
  type DetectRun,
  type IngestRun,
  MockKafkaDeployment,
  runDetect,
  runIngest,
  TRACES_PARTITIONS,
  windowRates,
} from '../kafka-role-runs.ts';
import { median } from '../measure.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';
import { simulatedPayloads } from '../workloads/simulated-payloads.ts';

/**
 * The scaled mode's two working roles through librdkafka's mock cluster, on the simulator's
 * benchmark workload, one role at a time:
 * - ingest: the workload already on the traces topic, as the Collector's kafka exporter writes it
 *   (otlp_proto) → the ingest role decodes, extracts attempts, writes them to the attempts topic;
 * - detect: then those attempts → the detect role applies them to its partitions' detectors and
 *   SQLite files, writes findings and incidents to the incidents topic, commits its offsets.
 * Each role runs once over all of it; the run is cut into `repetitions + 1` windows of equal
 * progress, the first a warm-up (see kafka-role-runs.ts for why not a fresh role per repetition).
 * The detect role's findings must be the ones the in-memory detector finds in the same workload.
 */
export const kafkaSection: Section = {
  name: 'kafka',
  async run(context) {
    const { repetitions, seed } = context.sizes;
    const windows = repetitions + 1;
    const workload = simulatedPayloads(context.sizes.kafka.spans, seed);
    const attempts = attemptsExtracted(workload.bodies);
    const expectedIds = detectInMemory(workload, workload.bodies.length, undefined).findings.map((f) => f.id);

    const deployment = await MockKafkaDeployment.start();
    let ingest: IngestRun;
    let detect: DetectRun;
    let everythingKept: boolean;
    try {
      await deployment.publishTraces(workload.bodies);
      ingest = await runIngest(deployment, {
        messages: workload.bodies.length,
        attempts,
        nowUnixMillis: workload.endUnixMillis,
      });
      detect = await runDetect(deployment, {
        attempts: ingest.attemptsWritten,
        stateDir: context.freshDir('kafka-detect'),
        nowUnixMillis: workload.endUnixMillis,
      });
      const { traces, attempts: attemptsTopic } = deployment.topics;
      everythingKept =
        (await deployment.keepsEverything(traces)) && (await deployment.keepsEverything(attemptsTopic));
    } finally {
      await deployment.stop();
    }

    const spansPerSecond = windowRates(ingest.marks, windows).slice(1);
    const attemptsPerSecond = windowRates(detect.marks, windows).slice(1);
    const everyAttemptWritten = ingest.spansDecoded >= workload.spans && ingest.attemptsWritten >= attempts;
    const redelivered =
      ingest.spansDecoded > workload.spans
        ? `; ${ingest.spansDecoded - workload.spans} spans read twice (a rebalance)`
        : '';
    const rows: Row[] = [
      {
        section: 'kafka',
        measurement: 'ingest role: traces topic (otlp_proto) → attempts topic',
        value: median(spansPerSecond),
        unit: 'spans/s',
        check: {
          ok: everyAttemptWritten && everythingKept,
          what:
            `${workload.spans} spans read, ${ingest.attemptsWritten} attempts written` +
            `${everythingKept ? '' : '; the broker dropped records'}${redelivered}`,
        },
        samples: spansPerSecond,
        note:
          `the simulator's benchmark scenario (seed ${seed}): ${workload.spans} spans (~20% mutation attempts) ` +
          `in ${workload.bodies.length} unkeyed otlp_proto messages of 512 spans on ${TRACES_PARTITIONS} ` +
          "partitions, written beforehand as the Collector's kafka exporter writes them, to librdkafka's " +
          'mock cluster (its own process, loopback). The role runs in this process, alone, once over all of ' +
          `it; the run is cut into ${windows} windows of equal spans decoded, the first a warm-up, and each ` +
          'figure is a median over the other windows. The run ends when every message was read and its ' +
          `attempts (${attempts}, with node activity copied to each of the ${ATTEMPTS_PARTITIONS} attempts ` +
          'partitions) acknowledged by the broker (acks=-1). Before: ' +
          `${ingest.firstRecordSeconds.toFixed(1)} s from joining the group to the first record; after: ` +
          `${ingest.commitLagSeconds.toFixed(2)} s until the offsets, committed once a second, reached the end. ` +
          `Whole run: ${Math.round(workload.spans / runSeconds(ingest)).toLocaleString('en-US')} spans/s, ` +
          `this process using ${(ingest.cpuSeconds / runSeconds(ingest)).toFixed(2)} cores`,
      },
      {
        section: 'kafka',
        measurement: 'detect role: attempts topic → SQLite + incidents topic',
        value: median(attemptsPerSecond),
        unit: 'attempts/s',
        check: {
          ok: sameIds(expectedIds, detect.findingIds) && detect.attemptsApplied >= ingest.attemptsWritten,
          what: `same ${expectedIds.length} finding ids as in memory`,
        },
        samples: attemptsPerSecond,
        note:
          `the ${ingest.attemptsWritten} attempts the ingest run wrote, read by a new consumer group with ` +
          `empty state (each of the ${ATTEMPTS_PARTITIONS} partitions rebuilt from offset 0 into its own ` +
          "SQLite file), the detectors' clock at the workload's last span; windows of equal attempts applied, " +
          'as above. The run ends when every attempt is applied, each batch in one committed SQLite ' +
          "transaction whose findings and incidents are acknowledged on the incidents topic before the partition's " +
          `next batch. Before: ${detect.firstRecordSeconds.toFixed(1)} s from joining the group to the first ` +
          `record${detect.firstRecordSeconds >= 4 ? HELD_PARTITIONS : ''}; after: ` +
          `${detect.commitLagSeconds.toFixed(2)} s until the offsets reached the end. Whole run: ` +
          `${Math.round(detect.attemptsApplied / runSeconds(detect)).toLocaleString('en-US')} attempts/s, this ` +
          `process using ${(detect.cpuSeconds / runSeconds(detect)).toFixed(2)} cores. Findings read from the ` +
          'SQLite files after one more tick, compared with decode → attempts → detector in memory',
      },
    ];
    return rows;
  },
};

/**
 * Why the detect role reads nothing for seconds after joining: it pauses every assigned partition
 * until it has positioned it, and a kafkajs consumer whose partitions are all paused sleeps its
 * fetch wait (maxWaitTimeInMs, 5 s by default) before it fetches again.
 */
const HELD_PARTITIONS =
  ' (the role pauses each partition until positioned; with all paused, kafkajs sleeps its 5 s fetch wait)';

function runSeconds(run: IngestRun | DetectRun): number {
  return (run.marks.at(-1)!.atMillis - run.marks[0]!.atMillis) / 1000;
}

/** Attempts the ingest role extracts from `bodies`: its decode filter, no span deduplication. */
function attemptsExtracted(bodies: readonly Uint8Array[]): number {
  const mapping = defaultMapping();
  const options = mappingDecodeOptions(mapping);
  let count = 0;
  for (const body of bodies) count += extractAttempts(decodeTraces(body, options), mapping).attempts.length;
  return count;
}

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((id) => set.has(id));
}
