import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { KafkaCluster } from '@keyscope/testkit/kafka';

const repositoryRoot = fileURLToPath(new URL('../../../', import.meta.url));

export type Role = 'ingest' | 'detect' | 'serve' | 'all';

/** `keyscope serve --role …` as a child process, as an operator runs it. */
export interface RoleProcess {
  readonly role: Role;
  readonly child: ChildProcessWithoutNullStreams;
  /** `http://host:port` of the API (serve, all) or of /healthz and /metrics (ingest, detect). */
  readonly api: string;
  /** The OTLP/HTTP receiver (ingest, all). */
  readonly otlpHttp?: string;
  output(): string;
  readonly exited: Promise<number | null>;
}

/** The logical topics a scaled deployment under test uses. */
export interface Topics {
  readonly traces: string;
  readonly attempts: string;
  readonly incidents: string;
  readonly deadLetter?: string;
}

/** KEYSCOPE_* variables pointing a role at the cluster, exactly as docker-compose.yml does. */
export function kafkaEnvironment(cluster: KafkaCluster, topics: Topics): Record<string, string> {
  return {
    KEYSCOPE_KAFKA_BROKERS: cluster.brokers.join(','),
    KEYSCOPE_KAFKA_TRACES_TOPIC: topics.traces,
    KEYSCOPE_KAFKA_ATTEMPTS_TOPIC: topics.attempts,
    KEYSCOPE_KAFKA_INCIDENTS_TOPIC: topics.incidents,
    ...(topics.deadLetter === undefined ? {} : { KEYSCOPE_KAFKA_DEAD_LETTER_TOPIC: topics.deadLetter }),
    KEYSCOPE_KAFKA_TRACES_GROUP_ID: cluster.group('keyscope-ingest'),
    KEYSCOPE_KAFKA_ATTEMPTS_GROUP_ID: cluster.group('keyscope-detect'),
  };
}

export async function startRole(
  role: Role,
  environment: Record<string, string>,
  timeoutMillis = 30_000,
): Promise<RoleProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'services/analyzer/src/cli.ts',
      'serve',
      '--role',
      role,
      '--api-port',
      '0',
      '--otlp-http-port',
      '0',
      '--otlp-grpc-port',
      '0',
    ],
    { cwd: repositoryRoot, env: { ...withoutKeyscopeVariables(process.env), ...environment } },
  );
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const started: Record<Role, RegExp[]> = {
    ingest: [/^otlp-grpc listening on /m, /^ingest consuming /m],
    detect: [/^detect consuming /m],
    serve: [/^serve materializing /m],
    all: [/^detect consuming /m, /^ingest consuming /m, /^serve materializing /m],
  };
  const deadline = Date.now() + timeoutMillis;
  while (Date.now() < deadline && child.exitCode === null) {
    const api = /^api listening on (\S+)$/m.exec(output)?.[1];
    if (api !== undefined && started[role].every((line) => line.test(output))) {
      const otlpHttp = /^otlp-http listening on (\S+)$/m.exec(output)?.[1];
      return { role, child, api, otlpHttp, output: () => output, exited };
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`keyscope serve --role ${role} did not start: ${output}`);
}

export async function stopRole(role: RoleProcess): Promise<void> {
  if (role.child.exitCode === null && role.child.signalCode === null) role.child.kill('SIGTERM');
  const timer = setTimeout(() => role.child.kill('SIGKILL'), 15_000);
  await role.exited;
  clearTimeout(timer);
}

/**
 * Tears down what a test file started, in reverse: every role, then the test's producer, then the
 * cluster; then removes `dir`. Safe after a `beforeAll` that failed part way.
 */
export async function stopDeployment(deployment: {
  roles: readonly RoleProcess[];
  producer: { disconnect(): Promise<void> } | undefined;
  cluster: KafkaCluster | undefined;
  dir: string;
}): Promise<void> {
  await Promise.all(deployment.roles.map((role) => stopRole(role)));
  await deployment.producer?.disconnect();
  await deployment.cluster?.stop();
  rmSync(deployment.dir, { recursive: true, force: true });
}

/** A developer's own KEYSCOPE_* settings must not leak into the roles under test. */
function withoutKeyscopeVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !name.startsWith('KEYSCOPE_')));
}
