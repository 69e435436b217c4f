import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * docs/tutorial.md as a reader runs it: its shell blocks verbatim, in order, with each file block
 * saved under the name its first line gives, in a fresh folder outside the repository. The first
 * block (the gate's `npm pack` and the `npm install` from the registry) runs on this machine's
 * network; the rest run in one `bash -e`, in a network namespace of their own when the machine
 * allows one (`unshare -rn`), so the tutorial's fixed ports (8080, 4317, 4318, 9000, 8081, 8082)
 * meet nothing else on the machine, and on its loopback otherwise. `$KEYSCOPE`, which the tutorial
 * asks the reader to set to their checkout, is this repository.
 */
const repositoryRoot = fileURLToPath(new URL('../', import.meta.url));
const tutorial = readFileSync(join(repositoryRoot, 'docs/tutorial.md'), 'utf8');

const SETUP_TIMEOUT_MILLIS = 240_000;
const RUN_TIMEOUT_MILLIS = 150_000;

interface Block {
  readonly language: string;
  readonly text: string;
}

const blocks: Block[] = [...tutorial.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((match) => ({
  language: match[1]!,
  text: match[2]!,
}));
const shellBlocks = blocks.filter((block) => block.language === 'sh').map((block) => block.text);
/** The js blocks that name their file on their first line (`// payments.mjs: …`), by file name. */
const files = new Map(
  blocks
    .filter((block) => block.language === 'js')
    .flatMap((block) => {
      const name = /^\/\/ ([\w.-]+\.mjs):/.exec(block.text)?.[1];
      return name === undefined ? [] : [[name, block.text] as const];
    }),
);
const [setupBlock, ...runBlocks] = shellBlocks;

interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

// Without the vitest worker's flags (its conditions would resolve the gate to its sources), nor
// keyscope settings of the environment running the tests.
function readerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, KEYSCOPE: repositoryRoot };
  delete env.NODE_OPTIONS;
  for (const name of Object.keys(env)) if (name.startsWith('KEYSCOPE_')) delete env[name];
  return env;
}

function canUnshareNetwork(): boolean {
  try {
    execFileSync('unshare', ['-rn', 'ip', 'link', 'set', 'lo', 'up'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * `bash -e script` in `cwd`, in a process group of its own (its pid), the whole group stopped past
 * `timeoutMillis`.
 */
function runScript(
  script: string,
  cwd: string,
  timeoutMillis: number,
  isolated: boolean,
): { pgid: number; result: Promise<RunResult> } {
  const command = isolated
    ? ['unshare', '-rn', 'bash', '-c', 'ip link set lo up && exec bash -e "$0"', script]
    : ['bash', '-e', script];
  const child = spawn(command[0]!, command.slice(1), { cwd, env: readerEnv(), detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGTERM'), timeoutMillis);
  const result = new Promise<RunResult>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  return { pgid: child.pid!, result };
}

/** Whether any process of the group `pgid` is left. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The version of `name` installed where `from` resolves it. */
function installedVersion(name: string, from: string): string {
  let dir = dirname(createRequire(from).resolve(name));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (manifest.name === name) return manifest.version;
    } catch {}
    if (dirname(dir) === dir) throw new Error(`no package.json of ${name} above ${from}`);
    dir = dirname(dir);
  }
}

let dir: string;
let project: string;
let setup: RunResult;
let run: RunResult;
let runPgid: number | undefined;
/** Whether every process the run started was gone within 20 s of its shell's exit. */
let stoppedWithShell = false;

beforeAll(
  async () => {
    dir = mkdtempSync(join(tmpdir(), 'keyscope-tutorial-'));
    const setupScript = join(dir, 'setup.sh');
    writeFileSync(setupScript, setupBlock!);
    setup = await new Promise((resolve) => {
      execFile(
        'bash',
        ['-e', setupScript],
        { cwd: dir, env: readerEnv(), timeout: SETUP_TIMEOUT_MILLIS, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : 1, stdout, stderr }),
      );
    });
    if (setup.code !== 0) throw new Error(`the first block failed:\n${setup.stdout}${setup.stderr}`);
    // The folder the first block made and moved into.
    const made = readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory());
    expect(made).toHaveLength(1);
    project = join(dir, made[0]!.name);
    for (const [name, text] of files) writeFileSync(join(project, name), text);

    const runScriptPath = join(dir, 'run.sh');
    writeFileSync(runScriptPath, runBlocks.join('\n'));
    const running = runScript(runScriptPath, project, RUN_TIMEOUT_MILLIS, canUnshareNetwork());
    runPgid = running.pgid;
    run = await running.result;
    const deadline = Date.now() + 20_000;
    while (groupAlive(runPgid) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    stoppedWithShell = !groupAlive(runPgid);
  },
  SETUP_TIMEOUT_MILLIS + RUN_TIMEOUT_MILLIS + 30_000,
);

afterAll(() => {
  if (runPgid !== undefined && groupAlive(runPgid)) process.kill(-runPgid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('docs/tutorial.md, run as pasted', () => {
  it('is one install block, the four files of the example, and the blocks that run them', () => {
    expect(setupBlock).toContain('npm install ');
    expect([...files.keys()].sort()).toEqual([
      'card-processor.mjs',
      'checkout.mjs',
      'instrumentation.mjs',
      'payments.mjs',
    ]);
    expect(runBlocks.length).toBeGreaterThanOrEqual(1);
  });

  it('installs the OpenTelemetry packages at the versions this workspace is tested with', () => {
    const install = setupBlock!.split('\n').find((line) => line.startsWith('npm install '))!;
    const named = install
      .split(/\s+/)
      .slice(2)
      .filter((word) => !word.endsWith('.tgz'));
    expect(named.length).toBeGreaterThan(0);
    const workspace = join(repositoryRoot, 'test/package.json');
    const sdk = createRequire(workspace).resolve('@opentelemetry/instrumentation-http');
    for (const word of named) {
      const at = word.lastIndexOf('@');
      const name = word.slice(0, at);
      // The instrumentation base is a dependency of the HTTP instrumentation, not of the tests.
      const from = name === '@opentelemetry/instrumentation' ? sdk : workspace;
      expect(`${name}@${installedVersion(name, from)}`).toBe(word);
    }
  });

  it('prints the key, the timed-out send to the first node and the 201 of the second', () => {
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines.filter((line) => /^key: [0-9a-f-]{36}$/.test(line))).toHaveLength(1);
    expect(lines).toContain('http://127.0.0.1:8081 timeout');
    expect(lines).toContain('http://127.0.0.1:8082 201');
    expect(lines.filter((line) => line.startsWith('card processor: charge '))).toHaveLength(2);
  });

  it('ends with keyscope showing both executions and one cross_store_duplicate, as the tutorial shows', () => {
    // jq's output: from a line `{` to a line `}` (keyscope's log lines are single lines).
    const printed = [...run.stdout.matchAll(/^\{\n[\s\S]*?^\}$/gm)].at(-1)?.[0] ?? '';
    const shown = blocks.filter((block) => block.language === 'json').at(-1)!.text;
    expect(JSON.parse(printed)).toEqual({
      ranTwice: true,
      executions: 2,
      findings: [
        {
          class: 'cross_store_duplicate',
          severity: 'critical',
          stores: ['payments/node:payments-a-1', 'payments/node:payments-a-2'],
        },
      ],
    });
    expect(`${printed}\n`).toBe(shown);
  });

  it('stops keyscope, the card processor and the nodes when its shell exits', () => {
    expect(stoppedWithShell).toBe(true);
  });
});
