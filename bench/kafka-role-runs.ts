import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  createKafkaClient,
  KafkaCounters,
  type RunningRole,
  resolveServeConfig,
  type ServeConfig,
  silentLogger,
  startDetectRole,
  startIngestRole,
} from '@keyscope/analyzer';
import { type KafkaCluster, startMockKafkaCluster } from '@keyscope/testkit/kafka';
import BetterSqlite3 from 'better-sqlite3';
import { cpuSecondsSince } from './measure.ts';

/**
 * keyscope's Kafka roles measured through librdkafka's mock cluster (`@keyscope/testkit/kafka`: a
 * Kafka protocol peer on loopback, in its own process). The ingest and detect roles run in this
 * process, started exactly as `keyscope serve --role ingest|detect` starts them, one at a time.
 *
 * A role runs once over its whole input while its progress is recorded, and the run is cut into
 * windows of equal progress afterwards (`windowRates`): the windows stand for repetitions.
 * Starting a role costs seconds of protocol waits that are not keyscope's work (the group's
 * initial rebalance delay, 3 s; for the detect role kafkajs's 5 s fetch wait while every partition
 * is held until positioned; on stop, a fetch long-poll of up to 5 s), so a fresh role per
 * repetition would spend most of the section waiting.
 */

/** The deployment defaults (kafka.attempts.partitions, kafka.incidents.partitions). */
export const ATTEMPTS_PARTITIONS = 12;
const INCIDENTS_PARTITIONS = 3;
/** The Collector's topic: its partition count is the Collector deployment's choice. */
export const TRACES_PARTITIONS = 24;
/**
 * The mock broker keeps at most 5 MiB per partition and silently drops older record batches;
 * `publishTraces` refuses a workload that would come near it, and `keepsEverything` checks after.
 */
const MOCK_PARTITION_BYTES = 5 * 1024 * 1024;
/** One produce request stays below the brokers' default 1 MiB record batch limit. */
const MAX_PRODUCE_BYTES = 900 * 1024;
/** Every wait is bounded: a role that stalls fails the section instead of hanging it. */
const RUN_TIMEOUT_MILLIS = 120_000;
const COMMIT_TIMEOUT_MILLIS = 15_000;
const POLL_MILLIS = 2;
/** The detect role ticks every second; one more tick regroups what the last attempts changed. */
const DETECT_TICK_WAIT_MILLIS = 1_200;

/** The topics and groups of the ingest run and of the detect run that reads its output. */
export interface RoleTopics {
  readonly traces: string;
  readonly attempts: string;
  readonly incidents: string;
  readonly ingestGroup: string;
  readonly detectGroup: string;
}

export class MockKafkaDeployment {
  readonly topics: RoleTopics;
  readonly #cluster: KafkaCluster;
  readonly #kafka: ReturnType<typeof createKafkaClient>;
  readonly #admin: ReturnType<ReturnType<typeof createKafkaClient>['admin']>;

  private constructor(cluster: KafkaCluster) {
    this.#cluster = cluster;
    this.topics = {
      traces: cluster.topic('traces'),
      attempts: cluster.topic('attempts'),
      incidents: cluster.topic('incidents'),
      ingestGroup: cluster.group('ingest'),
      detectGroup: cluster.group('detect'),
    };
    this.#kafka = createKafkaClient(
      { brokers: cluster.brokers, clientId: 'keyscope-bench' },
      'bench',
      silentLogger,
    );
    this.#admin = this.#kafka.admin();
  }

  /** A mock cluster with the traces, attempts and incidents topics (it refuses CreateTopics). */
  static async start(): Promise<MockKafkaDeployment> {
    const cluster = await startMockKafkaCluster({
      traces: TRACES_PARTITIONS,
      attempts: ATTEMPTS_PARTITIONS,
      incidents: INCIDENTS_PARTITIONS,
    });
    const deployment = new MockKafkaDeployment(cluster);
    try {
      await deployment.#admin.connect();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return deployment;
  }

  get brokers(): readonly string[] {
    return this.#cluster.brokers;
  }

  /**
   * Writes `bodies` to the traces topic as the Collector's kafka exporter does with
   * `traces.encoding: otlp_proto`: one unkeyed message per exported batch whose value is OTLP
   * `TracesData` — the bytes of an `ExportTraceServiceRequest`, whose only field is the same
   * repeated `ResourceSpans` — acknowledged by the leader (the exporter's default acks), spread
   * round-robin over the partitions.
   */
  async publishTraces(bodies: readonly Uint8Array[]): Promise<void> {
    const bytes = bodies.reduce((sum, body) => sum + body.byteLength, 0);
    if (bytes / TRACES_PARTITIONS > MOCK_PARTITION_BYTES * 0.8) {
      throw new RangeError(
        `the mock broker keeps 5 MiB per partition; ${bytes} bytes over ${TRACES_PARTITIONS} partitions leave no margin`,
      );
    }
    const producer = this.#kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    try {
      let batch: { partition: number; value: Buffer }[] = [];
      let batchBytes = 0;
      const send = async () => {
        if (batch.length === 0) return;
        await producer.send({ topic: this.topics.traces, acks: 1, messages: batch });
        batch = [];
        batchBytes = 0;
      };
      for (const [i, body] of bodies.entries()) {
        if (batchBytes + body.byteLength > MAX_PRODUCE_BYTES) await send();
        batch.push({ partition: i % TRACES_PARTITIONS, value: Buffer.from(body) });
        batchBytes += body.byteLength;
      }
      await send();
    } finally {
      await producer.disconnect();
    }
  }

  /** Whether every record ever written to `topic` is still there (see MOCK_PARTITION_BYTES). */
  async keepsEverything(topic: string): Promise<boolean> {
    const offsets = await this.#admin.fetchTopicOffsets(topic);
    return offsets.every((partition) => Number(partition.low) === 0);
  }

  /** Whether `group` has committed, on every partition of `topic`, the offset past its last record. */
  async committedToEnd(group: string, topic: string): Promise<boolean> {
    const [ends, [committed]] = await Promise.all([
      this.#admin.fetchTopicOffsets(topic),
      this.#admin.fetchOffsets({ groupId: group, topics: [topic] }),
    ]);
    return ends.every((end) => {
      const offset = committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? '-1';
      // A partition nothing was written to needs no commit.
      return Number(end.high) === 0 || Number(offset) >= Number(end.high);
    });
  }

  async stop(): Promise<void> {
    await this.#admin.disconnect();
    await this.#cluster.stop();
  }
}

/** A role's progress (spans decoded, attempts applied) at one instant. */
export interface Mark {
  atMillis: number;
  progress: number;
}

export interface RoleRun {
  /**
   * The first record in hand (progress 0), every reading at which the progress had moved, and the
   * end. Progress moves a batch at a time (a batch's spans are counted once decoded, its attempts
   * once applied); the end can come after the last move (the ingest role's last writes).
   */
  marks: Mark[];
  /** From the role's consumer having joined its group to its first record. */
  firstRecordSeconds: number;
  /** CPU seconds this process spent from the first record to the end: the role's alone. */
  cpuSeconds: number;
  /** From the end until the group's committed offsets reached the end of its input. */
  commitLagSeconds: number;
}

/**
 * Progress per second in each of `windows` windows that split the run's final progress in equal
 * shares; the last window ends with the last mark. A share rarely ends exactly at a mark: between
 * two marks the work is taken to have gone on at an even pace, since a batch counted at one mark
 * was worked on since the mark before.
 */
export function windowRates(marks: readonly Mark[], windows: number): number[] {
  const final = marks.at(-1)?.progress ?? 0;
  if (marks.length < 2 || final <= 0) throw new RangeError('a run needs progress to be split in windows');
  const timeAt = (progress: number): number => {
    if (progress >= final) return marks.at(-1)!.atMillis;
    const after = marks.findIndex((mark) => mark.progress >= progress);
    const b = marks[after]!;
    if (after === 0) return b.atMillis;
    const a = marks[after - 1]!;
    return a.atMillis + ((progress - a.progress) / (b.progress - a.progress)) * (b.atMillis - a.atMillis);
  };
  const rates: number[] = [];
  for (let i = 0; i < windows; i++) {
    const from = (i * final) / windows;
    const to = ((i + 1) * final) / windows;
    rates.push(((to - from) / (timeAt(to) - timeAt(from))) * 1000);
  }
  return rates;
}

export interface IngestRun extends RoleRun {
  spansDecoded: number;
  /** Attempts acknowledged on the attempts topic. */
  attemptsWritten: number;
}

export interface DetectRun extends RoleRun {
  attemptsApplied: number;
  /** Findings in the partitions' SQLite files once the role stopped: what a restart resumes from. */
  findingIds: string[];
}

/**
 * The ingest role over the traces topic, which holds `messages` messages yielding `attempts`
 * attempts, with its clock at `nowUnixMillis`; its progress is the spans decoded. The run ends when every message was read and every
 * attempt acknowledged on the attempts topic (acks=-1: only then does the role mark a message's
 * offset for commit); the commit, made once a second, is awaited afterwards, outside the timed span.
 */
export async function runIngest(
  deployment: MockKafkaDeployment,
  expected: { messages: number; attempts: number; nowUnixMillis: number },
): Promise<IngestRun> {
  const { topics } = deployment;
  const counters = new FirstRecordCounters();
  const config = roleConfig(deployment, 'ingest', '');
  // The clock the workload's spans are held to (the window of docs/configuration.md, "Spans").
  const role = await startIngestRole(config, {
    logger: silentLogger,
    counters,
    now: () => expected.nowUnixMillis,
  });
  const run = await timeRole(role, counters, deployment, {
    progress: () => counters.spansDecoded,
    done: () =>
      (counters.consumed.get(topics.traces) ?? 0) >= expected.messages &&
      counters.attemptsExtracted >= expected.attempts,
    what: `${expected.messages} traces messages read and ${expected.attempts} attempts written`,
    group: topics.ingestGroup,
    input: topics.traces,
  });
  return { ...run, spansDecoded: counters.spansDecoded, attemptsWritten: counters.attemptsExtracted };
}

/**
 * The detect role over the attempts topic, which holds `attempts` attempts, with its partitions'
 * state under the empty `stateDir` and its clock at `nowUnixMillis`; its progress is the attempts
 * applied. The run ends when every attempt is applied, each batch in one committed SQLite
 * transaction whose findings and incidents are acknowledged by Kafka before the partition's next
 * batch. The commit of the offsets (once a second) and one more tick are awaited afterwards,
 * outside the timed span.
 */
export async function runDetect(
  deployment: MockKafkaDeployment,
  expected: { attempts: number; stateDir: string; nowUnixMillis: number },
): Promise<DetectRun> {
  const { topics } = deployment;
  const counters = new FirstRecordCounters();
  const config = roleConfig(deployment, 'detect', expected.stateDir);
  const role = await startDetectRole(config, {
    logger: silentLogger,
    counters,
    now: () => expected.nowUnixMillis,
  });
  const run = await timeRole(role, counters, deployment, {
    progress: () => counters.attemptsDetected,
    done: () => counters.attemptsDetected >= expected.attempts,
    what: `${expected.attempts} attempts applied`,
    group: topics.detectGroup,
    input: topics.attempts,
    afterEndMillis: DETECT_TICK_WAIT_MILLIS,
  });
  return {
    ...run,
    attemptsApplied: counters.attemptsDetected,
    findingIds: committedFindingIds(expected.stateDir),
  };
}

/** KafkaCounters that note when the role had its first record in hand, and the CPU used until then. */
class FirstRecordCounters extends KafkaCounters {
  firstRecord: { atMillis: number; cpu: NodeJS.CpuUsage } | undefined;

  override count(map: Map<string, number>, label: string, n = 1): void {
    if (this.firstRecord === undefined && map === this.consumed) {
      this.firstRecord = { atMillis: performance.now(), cpu: process.cpuUsage() };
    }
    super.count(map, label, n);
  }
}

async function timeRole(
  role: RunningRole,
  counters: FirstRecordCounters,
  deployment: MockKafkaDeployment,
  run: {
    progress: () => number;
    done: () => boolean;
    what: string;
    group: string;
    input: string;
    /** Also waited for after the end, alongside the commit. */
    afterEndMillis?: number;
  },
): Promise<RoleRun> {
  try {
    const joinedAt = performance.now();
    const marks: Mark[] = [];
    let last = 0;
    await Promise.race([
      poll(
        run.what,
        () => {
          const progress = run.progress();
          if (progress !== last) marks.push({ atMillis: performance.now(), progress });
          last = progress;
          return run.done();
        },
        RUN_TIMEOUT_MILLIS,
      ),
      role.failed,
    ]);
    const endedAt = performance.now();
    const first = counters.firstRecord!;
    const cpuSeconds = cpuSecondsSince(first.cpu);
    marks.push({ atMillis: endedAt, progress: run.progress() });
    const committed = Promise.race([
      poll(
        `${run.group} committed to the end of ${run.input}`,
        () => deployment.committedToEnd(run.group, run.input),
        COMMIT_TIMEOUT_MILLIS,
      ).then(() => performance.now()),
      role.failed,
    ]);
    const [committedAt] = await Promise.all([
      committed,
      new Promise((resolve) => setTimeout(resolve, run.afterEndMillis ?? 0)),
    ]);
    return {
      marks: [{ atMillis: first.atMillis, progress: 0 }, ...marks],
      firstRecordSeconds: (first.atMillis - joinedAt) / 1000,
      cpuSeconds,
      commitLagSeconds: (committedAt - endedAt) / 1000,
    };
  } finally {
    await role.stop();
  }
}

/** Resolves once `condition` holds, checked every POLL_MILLIS; rejects after `timeoutMillis`. */
async function poll(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMillis: number,
): Promise<void> {
  const deadline = performance.now() + timeoutMillis;
  while (!(await condition())) {
    if (performance.now() > deadline)
      throw new Error(`kafka bench: not done after ${timeoutMillis} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MILLIS));
  }
}

function roleConfig(
  deployment: MockKafkaDeployment,
  role: 'ingest' | 'detect',
  stateDir: string,
): ServeConfig {
  const { topics } = deployment;
  return resolveServeConfig({
    role,
    // The ingest role also opens its OTLP receivers: on loopback, on free ports, left idle.
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    kafka: {
      brokers: deployment.brokers,
      // The mock broker refuses CreateTopics; every topic exists before a role starts.
      createTopics: false,
      traces: { topic: topics.traces, encoding: 'otlp_proto', groupId: topics.ingestGroup },
      attempts: { topic: topics.attempts, partitions: ATTEMPTS_PARTITIONS, groupId: topics.detectGroup },
      incidents: { topic: topics.incidents, partitions: INCIDENTS_PARTITIONS },
      ...(stateDir === '' ? {} : { stateDir }),
    },
  });
}

function committedFindingIds(stateDir: string): string[] {
  const ids: string[] = [];
  for (const name of readdirSync(stateDir)) {
    if (!name.endsWith('.db')) continue;
    const db = new BetterSqlite3(join(stateDir, name));
    try {
      ids.push(...(db.prepare('SELECT id FROM findings').pluck().all() as string[]));
    } finally {
      db.close();
    }
  }
  return ids;
}
