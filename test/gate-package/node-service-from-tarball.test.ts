import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RunningService, resolveServeConfig, silentLogger, startServe } from '@keyscope/analyzer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeBlocks, namedFiles, section } from '../support/markdown-files.ts';

/**
 * What a user does with the gate outside this repository: `npm pack` it, `npm install` the tarball
 * into a fresh project, and run the root README's "Instrument a Node.js service in five minutes"
 * as written there (the test copies its files from the README): two payments nodes with node
 * stores, a client whose send times out on the first and is retried on the second, the real
 * OpenTelemetry Node SDK exporting OTLP to keyscope, and keyscope's API reporting the duplicate.
 */
const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(join(repositoryRoot, 'README.md'), 'utf8');
const gateReadme = readFileSync(join(repositoryRoot, 'packages/gate/README.md'), 'utf8');

/** The packages the README's install line names, at the versions it names and this workspace is tested with. */
const PINNED: Record<string, string> = {
  '@opentelemetry/api': '1.9.1',
  '@opentelemetry/sdk-node': '0.223.0',
  '@opentelemetry/sdk-trace-base': '2.12.0',
  '@opentelemetry/resources': '2.12.0',
  '@opentelemetry/instrumentation': '0.223.0',
  '@opentelemetry/instrumentation-http': '0.223.0',
};
/** For the type check of the declarations: the compiler, and fastify and SQLite types for the gate README's example. */
const TYPE_CHECK_TOOLS = ['typescript@5.9.3', 'fastify@5.12.8', '@types/better-sqlite3@9.6.0'];

const KEY = 'order-7781';
// The client gives up after 1 s; the card processor answers the first charge after 3 s. The
// second node answers well within the timeout, even cold on a loaded machine.
const CLIENT_TIMEOUT_MILLIS = 1_000;
const FIRST_CHARGE_MILLIS = 3_000;
const INSTALL_TIMEOUT_MILLIS = 240_000;

const fiveMinutes = section(readme, 'Instrument a Node.js service in five minutes');
const files = namedFiles(fiveMinutes, 'js');

let dir: string;
let app: string;
let keyscope: RunningService;
let api: string;
let cardProcessor: Server;
const charges: string[] = [];
let answeredCharges = 0;
const children: ChildProcessWithoutNullStreams[] = [];
let clientOutput = '';
let stderrOfNodes = '';
let typeCheck: RunResult;

// Without the vitest worker's own flags (its conditions would resolve the gate to its sources).
const cleanEnv = () => {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return env;
};

interface RunResult {
  readonly code: number;
  readonly stdout: string;
  /** stdout and stderr. */
  readonly output: string;
}

async function run(command: string, args: string[], cwd: string): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, env: cleanEnv(), timeout: INSTALL_TIMEOUT_MILLIS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, output: `${stdout}${stderr}` });
      },
    );
  });
}

async function mustRun(command: string, args: string[], cwd: string): Promise<RunResult> {
  const result = await run(command, args, cwd);
  if (result.code !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (${result.code}):\n${result.output}`);
  return result;
}

/** `node --import ./instrumentation.mjs <script>` in the project, as the README runs it. */
function startNode(script: string, env: Record<string, string>): ChildProcessWithoutNullStreams {
  const child = spawn(process.execPath, ['--import', './instrumentation.mjs', script], {
    cwd: app,
    env: { ...cleanEnv(), ...env },
  });
  children.push(child);
  return child;
}

async function listeningUrl(child: ChildProcessWithoutNullStreams): Promise<string> {
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" within 20 s:\n${output}`)), 20_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const url = /listening on (\S+)/.exec(output)?.[1];
      if (url !== undefined) {
        clearTimeout(timer);
        resolve(url);
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      stderrOfNodes += chunk;
    });
    child.on('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
  });
}

function exited(
  child: ChildProcessWithoutNullStreams,
): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
}

async function waitFor(condition: () => boolean, timeoutMillis: number): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads the API's JSON as a client script would.
async function get(path: string): Promise<any> {
  const response = await fetch(`${api}${path}`);
  expect(response.status).toBe(200);
  return response.json();
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-gate-tarball-'));
  app = join(dir, 'payments-example');
  mkdirSync(app);

  // 1. The tarball, as `npm pack` makes it (its prepack script builds dist/).
  const packed = await mustRun(
    'npm',
    ['pack', '--pack-destination', dir],
    join(repositoryRoot, 'packages/gate'),
  );
  const tarball = join(dir, packed.stdout.trim().split('\n').at(-1)!.trim());

  // 2. A fresh project with the README's files, and the tarball installed with plain npm.
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'payments-example', private: true, type: 'module' }),
  );
  for (const [name, text] of files) writeFileSync(join(app, name), text);
  writeFileSync(
    join(app, 'payments.ts'),
    namedFiles(section(gateReadme, 'Fastify'), 'ts').get('payments.ts') ?? '',
  );
  writeFileSync(join(app, 'sampler-types.ts'), SAMPLER_TYPES);
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  const pinned = Object.entries(PINNED).map(([name, version]) => `${name}@${version}`);
  // One npm run for the README's packages and the type check's tools.
  await mustRun('npm', ['install', '--no-audit', '--no-fund', tarball, ...pinned, ...TYPE_CHECK_TOOLS], app);
  typeCheck = await run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', '.'], app);

  // 3. keyscope, and a card processor that is slow to answer the first charge.
  keyscope = await startServe(
    resolveServeConfig({
      api: { port: 0 },
      db: { path: join(dir, 'keyscope.db') },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
    }),
    { logger: silentLogger },
  );
  api = `http://127.0.0.1:${keyscope.addresses.api.port}`;
  cardProcessor = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const id = `ch_${charges.length + 1}`;
      const delay = charges.length === 0 ? FIRST_CHARGE_MILLIS : 10;
      charges.push(body);
      setTimeout(() => {
        answeredCharges++;
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id }));
      }, delay);
    });
  });
  await new Promise<void>((resolve) => cardProcessor.listen(0, '127.0.0.1', resolve));

  // 4. Two payments nodes, then the client; then the nodes stop (SIGTERM), flushing their spans.
  const otlp = {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${keyscope.addresses.otlpHttp.port}`,
    CARD_PROCESSOR_URL: `http://127.0.0.1:${(cardProcessor.address() as AddressInfo).port}/charges`,
  };
  const node = (instance: string) =>
    startNode('payments.mjs', {
      ...otlp,
      PORT: '0',
      OTEL_SERVICE_NAME: 'payments',
      OTEL_RESOURCE_ATTRIBUTES: `service.instance.id=${instance},k8s.cluster.name=eu-1`,
    });
  const nodes = [node('payments-a-1'), node('payments-a-2')];
  const urls = await Promise.all(nodes.map(listeningUrl));
  const client = startNode('checkout.mjs', {
    ...otlp,
    OTEL_SERVICE_NAME: 'checkout',
    OTEL_RESOURCE_ATTRIBUTES: 'service.instance.id=checkout-1',
    IDEMPOTENCY_KEY: KEY,
    TIMEOUT_MILLIS: String(CLIENT_TIMEOUT_MILLIS),
    PAYMENTS_URLS: urls.join(','),
  });
  client.stdout.setEncoding('utf8').on('data', (chunk: string) => (clientOutput += chunk));
  client.stderr.setEncoding('utf8').on('data', (chunk: string) => (clientOutput += chunk));
  const clientExit = await exited(client);
  if (clientExit.code !== 0) throw new Error(`checkout.mjs exited with ${clientExit.code}:\n${clientOutput}`);
  // The abandoned first charge still completes on the first node.
  await waitFor(() => answeredCharges === 2, FIRST_CHARGE_MILLIS + 10_000);
  for (const child of nodes) child.kill('SIGTERM');
  const nodeExits = await Promise.all(nodes.map(exited));
  expect(nodeExits).toEqual([
    { code: null, signal: 'SIGTERM' },
    { code: null, signal: 'SIGTERM' },
  ]);
}, INSTALL_TIMEOUT_MILLIS + 60_000);

afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(children.map(exited));
  await keyscope?.stop();
  if (cardProcessor !== undefined) await new Promise((resolve) => cardProcessor.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Types a user's TypeScript project checks against the tarball's declarations. */
const SAMPLER_TYPES = `import { createKeyedSpanSampler, IdempotencyConfigError, keyAttributesOf, verify } from '@keyscope/gate';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';

export const sdk = new NodeSDK({
  sampler: createKeyedSpanSampler({ otherwise: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.01) }) }),
  instrumentations: [
    new HttpInstrumentation({
      startIncomingSpanHook: (request) => keyAttributesOf(request),
      startOutgoingSpanHook: (request) => keyAttributesOf(request),
    }),
  ],
});

export function startupCode(): string | undefined {
  try {
    verify({ placement: { service: 'payments', node: 'a', cluster: '', region: '' }, keyScope: 'node', retryScope: { level: 'cluster' } });
  } catch (error) {
    if (error instanceof IdempotencyConfigError) return error.code;
  }
  return undefined;
}
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowJs: true,
    types: [],
  },
  files: ['payments.ts', 'sampler-types.ts'],
};

describe('the gate installed from its tarball into a Node.js service outside the repository', () => {
  it('runs the files of the README section, which are the whole example', () => {
    expect([...files.keys()].sort()).toEqual(['checkout.mjs', 'instrumentation.mjs', 'payments.mjs']);
    const install = codeBlocks(fiveMinutes, 'sh')
      .flatMap((block) => block.split('\n'))
      .find((line) => line.startsWith('npm install '));
    const named = install!
      .split(/\s+/)
      .slice(2)
      .filter((word) => !word.endsWith('.tgz'));
    // `name@version`, at the versions this test installs.
    expect(named.sort()).toEqual(
      Object.entries(PINNED)
        .map(([name, version]) => `${name}@${version}`)
        .sort(),
    );
  });

  it('ships built JavaScript with type declarations that a TypeScript project checks against', () => {
    const manifest = JSON.parse(readFileSync(join(app, 'node_modules/@keyscope/gate/package.json'), 'utf8'));
    expect(manifest.exports['.']).toMatchObject({ types: './dist/index.d.ts', default: './dist/index.js' });
    expect(Object.keys(manifest.dependencies ?? {})).toEqual([]);
    expect(readFileSync(join(app, 'node_modules/@keyscope/gate/dist/index.d.ts'), 'utf8')).toContain(
      'createKeyedSpanSampler',
    );
    // The gate README's fastify example and the sampler in the SDK's own types.
    expect(typeCheck.output).toBe('');
    expect(typeCheck.code).toBe(0);
  });

  it('times out the first send, retries on the other node, and both nodes charge', () => {
    const lines = clientOutput.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/ timeout$/);
    expect(lines[1]).toMatch(/ 201$/);
    expect(charges).toHaveLength(2);
    expect(stderrOfNodes).toBe('');
  });

  it('shows keyscope both executions, the timed-out send with its key, and one cross_store_duplicate', async () => {
    const key = await get(`/api/v1/keys/${KEY}`);
    expect(key).toMatchObject({ seen: true, executions: 2, ranTwice: true });
    const clients = key.attempts.filter((attempt: { kind: string }) => attempt.kind === 'client');
    expect(clients.map((attempt: { statusCode: number }) => attempt.statusCode).sort()).toEqual([0, 201]);
    const servers = key.attempts.filter((attempt: { kind: string }) => attempt.kind === 'server');
    expect(servers.map((attempt: { store: string }) => attempt.store).sort()).toEqual([
      'payments/node:payments-a-1',
      'payments/node:payments-a-2',
    ]);
    expect(key.findings).toHaveLength(1);
    expect(key.findings[0]).toMatchObject({
      class: 'cross_store_duplicate',
      severity: 'critical',
      service: 'payments',
      operation: '/payments',
      stores: ['payments/node:payments-a-1', 'payments/node:payments-a-2'],
    });
    const { items } = await get('/api/v1/incidents?class=cross_store_duplicate');
    expect(items).toHaveLength(1);
    expect(items[0].title).toMatch(/^payments \/payments: /);
  });
});
