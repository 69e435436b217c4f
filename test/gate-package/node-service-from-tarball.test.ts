import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeBlocks, namedFiles, section } from '../support/markdown-files.ts';

/**
 * What a TypeScript project gets from the gate's tarball: `npm pack` it, `npm install` the tarball
 * with the OpenTelemetry packages docs/tutorial.md installs, at its versions, into a fresh project,
 * and type-check against its declarations the gate README's fastify example (which imports the
 * tutorial's instrumentation.mjs) and the keyed-span sampler in the SDK's own types. The tutorial
 * itself, run as pasted, is test/tutorial.test.ts.
 */
const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));
const tutorial = readFileSync(join(repositoryRoot, 'docs/tutorial.md'), 'utf8');
const gateReadme = readFileSync(join(repositoryRoot, 'packages/gate/README.md'), 'utf8');

/** The compiler, and fastify and SQLite types for the gate README's example. */
const TYPE_CHECK_TOOLS = ['typescript@5.9.3', 'fastify@5.12.8', '@types/better-sqlite3@9.6.0'];
const INSTALL_TIMEOUT_MILLIS = 240_000;

/** The `name@version` words of the tutorial's `npm install` line, the tarball aside. */
const tutorialPackages = codeBlocks(tutorial, 'sh')
  .flatMap((block) => block.split('\n'))
  .find((line) => line.startsWith('npm install '))!
  .split(/\s+/)
  .slice(2)
  .filter((word) => !word.endsWith('.tgz'));

let dir: string;
let app: string;
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

  // 2. A fresh project: the tutorial's SDK file, the gate README's fastify service, the sampler's types.
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'payments-example', private: true, type: 'module' }),
  );
  writeFileSync(
    join(app, 'instrumentation.mjs'),
    namedFiles(tutorial, 'js').get('instrumentation.mjs') ?? '',
  );
  writeFileSync(
    join(app, 'payments.ts'),
    namedFiles(section(gateReadme, 'Fastify'), 'ts').get('payments.ts') ?? '',
  );
  writeFileSync(join(app, 'sampler-types.ts'), SAMPLER_TYPES);
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  await mustRun(
    'npm',
    ['install', '--no-audit', '--no-fund', tarball, ...tutorialPackages, ...TYPE_CHECK_TOOLS],
    app,
  );
  typeCheck = await run(process.execPath, [join(app, 'node_modules/typescript/bin/tsc'), '-p', '.'], app);
}, INSTALL_TIMEOUT_MILLIS + 60_000);

afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
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

describe('the gate installed from its tarball into a TypeScript project outside the repository', () => {
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
});
