import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ANALYZE_NODE_FLAGS, nodeFlagsFor, SERVICE_NODE_FLAGS } from '../src/node-flags.ts';

const root = new URL('../../../', import.meta.url);
const bin = new URL('services/analyzer/bin/keyscope.js', root).pathname;
const FIXTURE = new URL(
  'services/analyzer/test/fixtures/analyze/duplicate-payment-collector-export.jsonl',
  root,
);
const SERVE_ARGS = [
  'serve',
  '--api-port',
  '0',
  '--otlp-http-port',
  '0',
  '--otlp-grpc-port',
  '0',
  '--db',
  ':memory:',
];

describe("keyscope's Node.js flags", () => {
  it("are the service's for serve and demo, the batch job's for analyze, and none for help", () => {
    expect(nodeFlagsFor('serve')).toBe(SERVICE_NODE_FLAGS);
    expect(nodeFlagsFor('demo')).toBe(SERVICE_NODE_FLAGS);
    expect(nodeFlagsFor('analyze')).toBe(ANALYZE_NODE_FLAGS);
    expect(nodeFlagsFor('--help')).toEqual([]);
    expect(nodeFlagsFor(undefined)).toEqual([]);
  });

  it("are the service's in the container's entrypoint, which runs serve", () => {
    const dockerfile = readFileSync(new URL('deploy/keyscope.Dockerfile', root), 'utf8');
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    const script = entrypoint.findIndex((arg) => arg.endsWith('/keyscope/bin/keyscope.js'));
    // Before the script: a flag after it would be the CLI's argument, not node's.
    expect(entrypoint.slice(1, script)).toEqual([...SERVICE_NODE_FLAGS]);
    expect(JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!)).toEqual(['serve']);
  });

  it('are chosen for `pnpm keyscope` by bin/keyscope.js, the script giving node none of its own', () => {
    const script = (
      JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts.keyscope!;
    // One script runs every subcommand: a flag written here would apply to serve and analyze alike.
    expect(script.split(/\s+/)).toEqual(['exec', 'node', 'services/analyzer/bin/keyscope.js']);
  });

  it('give V8 a larger young generation than it has by default, in every subcommand', () => {
    const available = (flags: readonly string[]) =>
      Number(
        execFileSync(
          process.execPath,
          [...flags, '-p', "require('v8').getHeapStatistics().total_available_size"],
          {
            encoding: 'utf8',
          },
        ),
      );
    // Node 20 here: 144 MiB more, three times the 48 MiB the semi-space cap grew by.
    for (const flags of [SERVICE_NODE_FLAGS, ANALYZE_NODE_FLAGS]) {
      expect(available(flags) - available([])).toBeGreaterThan(100 * 1024 * 1024);
    }
  });

  it('start the young generation at its full size rather than growing it under load', () => {
    const newSpaceBytes = (flags: readonly string[]) =>
      Number(
        execFileSync(
          process.execPath,
          [
            ...flags,
            '-p',
            "require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size",
          ],
          { encoding: 'utf8' },
        ),
      );
    // V8 starts a semi-space at 1 MiB by default; keyscope's at its 64 MiB cap.
    expect(newSpaceBytes([])).toBeLessThan(8 * 1024 * 1024);
    for (const flags of [SERVICE_NODE_FLAGS, ANALYZE_NODE_FLAGS]) {
      expect(newSpaceBytes(flags)).toBeGreaterThanOrEqual(64 * 1024 * 1024);
    }
  });

  it('run the installed bin/keyscope.js when given to node, as docs/configuration.md says', () => {
    const help = execFileSync(process.execPath, [...ANALYZE_NODE_FLAGS, bin, 'analyze', '--help'], {
      encoding: 'utf8',
    });
    expect(help).toMatch(/^usage: keyscope analyze/);
    const docs = readFileSync(new URL('docs/configuration.md', root), 'utf8').replace(/\s+/g, ' ');
    expect(docs).toContain(`node ${SERVICE_NODE_FLAGS.join(' ')} bin/keyscope.js serve`);
    expect(docs).toContain(`node ${ANALYZE_NODE_FLAGS.join(' ')} bin/keyscope.js analyze`);
  });

  it("are the service's, added by bin/keyscope.js started without them, which stops serve on Ctrl-C", async () => {
    // Its own process group, as a shell gives a command; Ctrl-C signals the whole group.
    const command = spawn(process.execPath, [bin, ...SERVE_ARGS], { env: envWithout(), detached: true });
    let output = '';
    command.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    command.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => command.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 20_000;
    while (!/^otlp-grpc listening on /m.test(output) && command.exitCode === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(output).toMatch(/^api listening on /m);

    // Its children: keyscope in a node started with the flags (and tsx's esbuild service).
    const service = childrenOf(command.pid!).find((argv) => argv.includes(bin));
    expect(service).toEqual([process.execPath, ...SERVICE_NODE_FLAGS, bin, ...SERVE_ARGS]);
    // The command's group is the terminal's foreground group; keyscope runs in a group of its own.
    process.kill(-command.pid!, 'SIGINT');
    expect(await exited).toBe(0);
    expect(output).toMatch(/^keyscope: SIGINT, stopping\nkeyscope: stopped$/m);
  });

  it("are the batch job's for analyze, added by bin/keyscope.js started without them", async () => {
    // Reading stdin, analyze waits for its input: long enough to read its command line.
    const args = ['analyze', '--format', 'json', '-'];
    const command = spawn(process.execPath, [bin, ...args], { env: envWithout() });
    let stdout = '';
    command.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => command.on('exit', (code) => resolve(code)));

    expect(await reexecuted(command.pid!)).toEqual([process.execPath, ...ANALYZE_NODE_FLAGS, bin, ...args]);
    command.stdin.end(readFileSync(FIXTURE));
    expect(await exited).toBe(0);
    const report = JSON.parse(stdout) as { findings: { key: string }[] };
    expect(report.findings.map((finding) => finding.key)).toEqual(['9d4e1f0a-7c55-4a7e-b1e2-cc0ffee00001']);
  });

  it('leave a flag the operator gave node, on its command line or in NODE_OPTIONS, and add the rest', async () => {
    // Each: how the operator started keyscope, and the flag of keyscope's lists that then stays out.
    const overrides: { env: Record<string, string>; execArgv: string[]; replaced?: string }[] = [
      // node refuses --min-semi-space-size and V8's GC switches in NODE_OPTIONS, not this one.
      {
        env: { NODE_OPTIONS: '--max-semi-space-size=32' },
        execArgv: [],
        replaced: '--max-semi-space-size=64',
      },
      { env: {}, execArgv: ['--min-semi-space-size=8'], replaced: '--min-semi-space-size=64' },
      // A flag of the operator's own: a service on few busy cores without the concurrent marker.
      { env: {}, execArgv: ['--no-concurrent-marking'] },
    ];
    for (const { env, execArgv, replaced } of overrides) {
      for (const command of ['serve', 'analyze'] as const) {
        const args = command === 'serve' ? SERVE_ARGS : ['analyze', '-'];
        const child = spawn(process.execPath, [...execArgv, bin, ...args], { env: envWithout(env) });
        const exited = new Promise((resolve) => child.on('exit', resolve));
        try {
          const added = nodeFlagsFor(command).filter((flag) => flag !== replaced);
          expect(await reexecuted(child.pid!)).toEqual([
            process.execPath,
            ...execArgv,
            ...added,
            bin,
            ...args,
          ]);
        } finally {
          child.kill('SIGTERM');
          await exited;
        }
      }
    }
  });
});

/** The test process's environment without its NODE_OPTIONS (vitest's own), plus `extra`. */
function envWithout(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return { ...env, ...extra };
}

/**
 * The command line of the node that bin/keyscope.js (process `pid`) started again: its child
 * running the bin, once that child runs its own program. Until its exec the child shows its
 * parent's command line; bin/keyscope.js only starts a child to give it flags, so the two differ.
 */
async function reexecuted(pid: number): Promise<string[]> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const child = childrenOf(pid).find((argv) => argv.includes(bin));
    // Read once it has a child: by then the parent runs bin/keyscope.js, not the test's fork of itself.
    const parent = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    if (child !== undefined && `${child.join('\0')}\0` !== parent) return child;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`bin/keyscope.js (pid ${pid}) started no node with flags`);
}

/** The command lines of the processes whose parent is `pid` (Linux's /proc), their trailing NUL dropped. */
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
    .flatMap((child) => {
      try {
        return [readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').slice(0, -1)];
      } catch {
        return [];
      }
    });
}
