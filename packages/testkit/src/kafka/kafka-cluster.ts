import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';

const LAUNCHER_SOURCE = fileURLToPath(new URL('./mock-cluster.c', import.meta.url));

/**
 * A Kafka cluster for one test file (`@keyscope/testkit/kafka`): librdkafka's mock cluster
 * (packages/testkit/src/kafka/mock-cluster.c, compiled here on first use), or the real cluster named by KAFKA_BROKERS. Topic names get a
 * random suffix, so files running side by side — or repeated runs against a real cluster — never
 * share a topic or a consumer group.
 */
export interface KafkaCluster {
  readonly brokers: string[];
  /**
   * True for the mock broker: no CreateTopics, a SyncGroup race that can restart a member, and
   * at most 5 MiB kept per partition (older record batches are dropped) — tests size their
   * partitions so that nothing is dropped before it is read.
   */
  readonly mock: boolean;
  /** This run's name for a logical topic, e.g. topic('attempts') → `attempts-1a2b3c`. */
  topic(name: string): string;
  /** A group id unique to this run. */
  group(name: string): string;
  stop(): Promise<void>;
}

/** `topics` maps logical names to partition counts; every topic is created before this resolves. */
export async function startKafkaCluster(topics: Record<string, number>): Promise<KafkaCluster> {
  const suffix = randomBytes(3).toString('hex');
  const topic = (name: string) => `${name}-${suffix}`;
  const group = (name: string) => `${name}-${suffix}`;
  const external = process.env.KAFKA_BROKERS;
  if (external !== undefined && external.trim() !== '') {
    const brokers = external.split(',').map((part) => part.trim());
    await createTopics(
      brokers,
      Object.entries(topics).map(([name, partitions]) => [topic(name), partitions]),
    );
    return { brokers, mock: false, topic, group, stop: async () => {} };
  }
  return startMockKafkaCluster(topics, suffix);
}

/**
 * librdkafka's mock cluster on loopback, whatever KAFKA_BROKERS says: for `pnpm bench`, which
 * measures keyscope against this peer only. Topic and group names get `suffix` (random when absent).
 */
export async function startMockKafkaCluster(
  topics: Record<string, number>,
  suffix = randomBytes(3).toString('hex'),
): Promise<KafkaCluster> {
  const topic = (name: string) => `${name}-${suffix}`;
  const group = (name: string) => `${name}-${suffix}`;
  const launcher = compileLauncher();
  const child: ChildProcessWithoutNullStreams = spawn(
    launcher,
    Object.entries(topics).map(([name, partitions]) => `${topic(name)}:${partitions}`),
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  let bootstrap: string | undefined;
  while (Date.now() < deadline && child.exitCode === null) {
    bootstrap = /^bootstrap (\S+)$/m.exec(output)?.[1];
    if (bootstrap !== undefined) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  if (bootstrap === undefined) {
    child.kill('SIGKILL');
    throw new Error(`the mock Kafka cluster did not start: ${output}`);
  }
  return {
    brokers: bootstrap.split(','),
    mock: true,
    topic,
    group,
    async stop() {
      // Closing stdin is the launcher's signal to destroy the cluster and exit.
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Creates the topics on a real cluster (names are fresh, so none exists yet); fails if one is refused. */
async function createTopics(brokers: string[], topics: [name: string, partitions: number][]): Promise<void> {
  const admin = new Kafka({ clientId: 'keyscope-test', brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: topics.map(([topic, numPartitions]) => ({ topic, numPartitions, replicationFactor: 1 })),
    });
  } finally {
    await admin.disconnect();
  }
}

/**
 * Compiles the launcher into the temp dir, once per source version: a binary is never committed,
 * and parallel test files share one compilation (written under a temporary name, then renamed).
 */
function compileLauncher(): string {
  const source = readFileSync(LAUNCHER_SOURCE);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), 'keyscope-kafka-mock');
  const binary = join(dir, `mock-cluster-${hash}`);
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const partial = `${binary}.${process.pid}.tmp`;
  let flags: string[];
  try {
    flags = execFileSync('pkg-config', ['--cflags', '--libs', 'rdkafka'], { encoding: 'utf8' })
      .trim()
      .split(/\s+/)
      .filter((flag) => flag !== '');
  } catch {
    flags = ['-lrdkafka'];
  }
  try {
    execFileSync('gcc', ['-O1', '-o', partial, LAUNCHER_SOURCE, ...flags], { stdio: 'pipe' });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(
      `cannot compile ${LAUNCHER_SOURCE} (needs gcc and librdkafka-dev; scripts/ensure-test-tools.sh installs them): ${stderr}`,
    );
  }
  renameSync(partial, binary);
  return binary;
}
