import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANALYZE_NODE_FLAGS, SERVICE_NODE_FLAGS } from '../src/node-flags.ts';

/**
 * What a user does with the README's "Install": `pnpm pack:cli` in a checkout, `npm install -g` of
 * the tarball with plain npm into a fresh prefix, then the installed `keyscope` from outside the
 * repository: `demo` (its API, its web page, the service's Node.js flags, SIGTERM) and `analyze` of
 * a Collector export holding one duplicate (under the batch job's flags).
 *
 * better-sqlite3's install script downloads its prebuilt addon from GitHub, which this machine
 * cannot reach, and compiling it takes minutes: the test hands prebuild-install that same prebuilt,
 * made from the workspace's own addon, through its local-prebuilds setting, as a mirror would.
 */
const repositoryRoot = fileURLToPath(new URL('../../../', import.meta.url));
const analyzerRoot = join(repositoryRoot, 'services/analyzer');
const readme = readFileSync(join(repositoryRoot, 'README.md'), 'utf8');
const FIXTURE = join(analyzerRoot, 'test/fixtures/analyze/duplicate-payment-collector-export.jsonl');
const INSTALL_TIMEOUT_MILLIS = 240_000;

/** The text of the `## heading` section of a markdown file. */
function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no "## ${heading}" section`);
  const next = markdown.indexOf('\n## ', start + 1);
  return markdown.slice(start, next < 0 ? undefined : next);
}

/** The Install section's shell commands, one a line. */
const installCommands = [...section(readme, 'Install').matchAll(/^```sh\n([\s\S]*?)^```$/gm)].flatMap(
  (match) => match[1]!.trim().split('\n'),
);

// Without the vitest worker's own flags (its conditions would resolve packages to their sources).
const cleanEnv = (extra: Record<string, string> = {}) => {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_OPTIONS;
  return env;
};

interface RunResult {
  readonly code: number;
  readonly stdout: string;
  /** stdout and stderr. */
  readonly output: string;
}

function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return new Promise<RunResult>((resolve) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        env: options.env ?? cleanEnv(),
        timeout: INSTALL_TIMEOUT_MILLIS,
        maxBuffer: 16 << 20,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, output: `${stdout}${stderr}` });
      },
    );
  });
}

async function mustRun(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  const result = await run(command, args, options);
  if (result.code !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (${result.code}):\n${result.output}`);
  return result;
}

/** The command lines of the processes whose parent is `pid` (Linux's /proc). */
function childrenOf(pid: number): string[][] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map((child) => readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0'));
}

let dir: string;
let tarball: string;
let install: RunResult;
let installed: string;
let keyscopeBin: string;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-cli-tarball-'));

  // 1. The tarball, as `pnpm pack:cli` makes it.
  const script = (
    JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    }
  ).scripts['pack:cli']!;
  const [node, ...packArgs] = script.split(/\s+/);
  expect(node).toBe('node');
  const packed = await mustRun(process.execPath, [...packArgs, '--out', join(dir, 'packed')], {
    cwd: repositoryRoot,
  });
  tarball = packed.stdout.trim().split('\n').at(-1)!;

  // 2. The prebuilt addon prebuild-install looks for, from the workspace's better-sqlite3.
  const sqlite = join(analyzerRoot, 'node_modules/better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')) as { version: string };
  const prebuilds = join(dir, 'prebuilds');
  mkdirSync(prebuilds);
  const prebuilt = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await mustRun('tar', ['czf', join(prebuilds, prebuilt), 'build/Release/better_sqlite3.node'], {
    cwd: sqlite,
  });

  // 3. The README's npm command, into a fresh prefix, from npm's cache where it can.
  const npmInstall = installCommands.find((line) => line.startsWith('npm install -g '))!.split(/\s+/);
  const readmeTarball = npmInstall.findIndex((word) => word.endsWith('.tgz'));
  expect(basename(npmInstall[readmeTarball]!)).toBe(basename(tarball));
  npmInstall[readmeTarball] = tarball;
  const prefix = join(dir, 'prefix');
  install = await mustRun(
    'npm',
    [...npmInstall.slice(1), '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund'],
    { cwd: dir, env: cleanEnv({ npm_config_better_sqlite3_local_prebuilds: prebuilds }) },
  );
  installed = join(prefix, 'lib/node_modules/keyscope');
  keyscopeBin = join(prefix, 'bin/keyscope');
}, 2 * INSTALL_TIMEOUT_MILLIS);

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('keyscope packed by pnpm pack:cli and installed with plain npm', () => {
  it('packs keyscope-<version>.tgz and installs it with the commands of the README', () => {
    const { version } = JSON.parse(readFileSync(join(analyzerRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(basename(tarball)).toBe(`keyscope-${version}.tgz`);
    expect(installCommands).toContain('npx --yes pnpm@10.34.9 pack:cli');
  });

  it("builds better-sqlite3's addon in its install script, which --allow-scripts approves", () => {
    expect(existsSync(join(installed, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'))).toBe(
      true,
    );
    expect(install.output).not.toMatch(/better-sqlite3@[\d.]+ \(install:/);
  });

  it('ships JavaScript with no TypeScript compiler or bundler among its dependencies', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
      dependencies: Record<string, string>;
    };
    expect(manifest.bin).toEqual({ keyscope: 'bin/keyscope.js' });
    expect(Object.keys(manifest.dependencies)).toContain('better-sqlite3');
    for (const tool of ['tsx', 'typescript', 'esbuild']) {
      expect(existsSync(join(installed, 'node_modules', tool))).toBe(false);
    }
    expect(readdirSync(join(installed, 'dist')).filter((file) => file.endsWith('.ts'))).toEqual([]);
  });

  it('runs the demo under its Node.js flags, serves the prebuilt page, and stops on SIGTERM', async () => {
    const demo = spawn(
      keyscopeBin,
      [
        'demo',
        '--api-port',
        '0',
        '--otlp-http-port',
        '0',
        '--otlp-grpc-port',
        '0',
        '--db',
        join(dir, 'demo.db'),
      ],
      { cwd: dir, env: cleanEnv() },
    );
    children.push(demo);
    let output = '';
    demo.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    demo.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => demo.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 60_000;
    while (!/keeps serving/.test(output) && demo.exitCode === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const api = /^api listening on (\S+)$/m.exec(output)?.[1];
    expect(api, output).toBeDefined();
    expect(output).toMatch(/^demo: 14 keys really executed twice; keyscope opened 2 incidents:$/m);

    expect((await fetch(`${api}/healthz`)).status).toBe(200);
    const page = await fetch(`${api}/assets/page.js`);
    expect(page.status).toBe(200);
    expect(await page.text()).toBe(readFileSync(join(installed, 'dist/web-page/main.js'), 'utf8'));

    // The bin, started by its shebang without flags, runs keyscope in a node started with the service's.
    const [service] = childrenOf(demo.pid!);
    expect(service).toEqual(expect.arrayContaining([...SERVICE_NODE_FLAGS, 'demo']));

    demo.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toMatch(/^keyscope: SIGTERM, stopping\nkeyscope: stopped$/m);
  });

  it("analyzes a Collector export under the batch job's Node.js flags and reports its duplicate", async () => {
    // Read from stdin, analyze waits for its input: long enough to read the command line it runs with.
    const analyze = spawn(keyscopeBin, ['analyze', '--format', 'json', '-'], { cwd: dir, env: cleanEnv() });
    children.push(analyze);
    let stdout = '';
    analyze.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => analyze.on('exit', (code) => resolve(code)));
    // The node the bin started again, once it runs: until its exec a child shows its parent's command line.
    let argv: string[] | undefined;
    const deadline = Date.now() + 20_000;
    while (argv === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const parent = readFileSync(`/proc/${analyze.pid}/cmdline`, 'utf8');
      argv = childrenOf(analyze.pid!).find(
        (child) => child.includes('analyze') && child.join('\0') !== parent,
      );
    }
    const serviceOnly = SERVICE_NODE_FLAGS.filter((flag) => !ANALYZE_NODE_FLAGS.includes(flag));
    expect(argv).toEqual(expect.arrayContaining([...ANALYZE_NODE_FLAGS, 'analyze']));
    expect(argv!.filter((arg) => serviceOnly.includes(arg))).toEqual([]);
    analyze.stdin.end(readFileSync(FIXTURE));
    expect(await exited).toBe(0);
    const report = JSON.parse(stdout) as { findings: { key: string; executions: number }[] };
    expect(report.findings).toEqual([
      expect.objectContaining({ key: '9d4e1f0a-7c55-4a7e-b1e2-cc0ffee00001', executions: 2 }),
    ]);
  });
});
