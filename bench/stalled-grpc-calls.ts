import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectHttp2, grpcPrefix, openRawGrpcCall, type RawGrpcAnswer } from '@keyscope/testkit/wire';

/**
 * `keyscope serve`, with its default settings, under OTLP/gRPC calls that stall: 6 connections ×
 * 100 calls, each declaring a 4 MiB message and sending 4 MB of it, then waiting. Prints the
 * service's peak resident set (VmHWM), sampled until every call has been answered, and how the
 * calls were answered. Run: `node --import tsx bench/stalled-grpc-calls.ts [connections] [calls]`.
 */

const CONNECTIONS = Number(process.argv[2] ?? 6);
const CALLS_PER_CONNECTION = Number(process.argv[3] ?? 100);
const DECLARED_BYTES = 4 * 1024 * 1024;
const SENT_BYTES = 4_000_000;
/** Every call ends by messageTimeoutMillis (10 s by default); past this the run has failed. */
const GIVE_UP_MILLIS = 60_000;

const repositoryRoot = fileURLToPath(new URL('../', import.meta.url));
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    'services/analyzer/src/cli.ts',
    'serve',
    '--api-port',
    '0',
    '--otlp-http-port',
    '0',
    '--otlp-grpc-port',
    '0',
    '--db',
    ':memory:',
  ],
  { cwd: repositoryRoot, stdio: ['ignore', 'pipe', 'inherit'] },
);
let output = '';
child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
const port = await new Promise<number>((resolve, reject) => {
  const timer = setInterval(() => {
    const match = /^otlp-grpc listening on 127\.0\.0\.1:(\d+)$/m.exec(output);
    if (match) {
      clearInterval(timer);
      resolve(Number(match[1]));
    } else if (child.exitCode !== null) {
      clearInterval(timer);
      reject(new Error(`keyscope serve exited: ${output}`));
    }
  }, 50);
});

function memory(): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kib('VmRSS') * 1024, peak: kib('VmHWM') * 1024 };
}

const before = memory();
const part = Buffer.alloc(SENT_BYTES);
const began = Date.now();
const answers: Promise<RawGrpcAnswer>[] = [];
const openSessions = [];
for (let c = 0; c < CONNECTIONS; c += 1) {
  const session = connectHttp2(port);
  openSessions.push(session);
  for (let i = 0; i < CALLS_PER_CONNECTION; i += 1) {
    answers.push(
      openRawGrpcCall(session, {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        chunks: [grpcPrefix(DECLARED_BYTES), part],
      }).answer,
    );
  }
}
let answered = 0;
for (const answer of answers) void answer.then(() => (answered += 1));
let largestRss = before.rss;
while (answered < answers.length && Date.now() - began < GIVE_UP_MILLIS) {
  await new Promise((resolve) => setTimeout(resolve, 200));
  largestRss = Math.max(largestRss, memory().rss);
}
const after = memory();
const statuses = new Map<string, number>();
for (const answer of await Promise.race([
  Promise.all(answers),
  new Promise<RawGrpcAnswer[]>((resolve) => setTimeout(() => resolve([]), 100)),
])) {
  const key = String(answer.status);
  statuses.set(key, (statuses.get(key) ?? 0) + 1);
}
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
console.log(
  [
    `${answers.length} stalled calls (${CONNECTIONS} connections × ${CALLS_PER_CONNECTION}), ${answered} answered in ${((Date.now() - began) / 1000).toFixed(1)} s`,
    `grpc-status of the answers: ${JSON.stringify(Object.fromEntries(statuses))}`,
    `keyscope serve RSS: ${mib(before.rss)} before, largest sample ${mib(largestRss)}, peak (VmHWM) ${mib(after.peak)}`,
  ].join('\n'),
);
for (const session of openSessions) session.destroy();
child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
process.exit(answered === answers.length && after.peak <= 1024 * 1024 * 1024 ? 0 : 1);
