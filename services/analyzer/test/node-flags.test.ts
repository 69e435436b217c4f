import { execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KEYSCOPE_NODE_FLAGS } from '../src/node-flags.ts';

const root = new URL('../../../', import.meta.url);

describe("keyscope's Node.js flags", () => {
  it('are passed by the keyscope script and by the container entrypoint', () => {
    const script = (
      JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts.keyscope!;
    const scriptArgs = script.split(/\s+/);
    const dockerfile = readFileSync(new URL('deploy/keyscope.Dockerfile', root), 'utf8');
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    for (const flag of KEYSCOPE_NODE_FLAGS) {
      // Before the script: a flag after it would be the CLI's argument, not node's.
      expect(scriptArgs.indexOf(flag)).toBeGreaterThan(0);
      expect(scriptArgs.indexOf(flag)).toBeLessThan(scriptArgs.indexOf('services/analyzer/src/cli.ts'));
      expect(entrypoint.indexOf(flag)).toBeGreaterThan(0);
      expect(entrypoint.indexOf(flag)).toBeLessThan(
        entrypoint.findIndex((arg) => arg.endsWith('/keyscope/bin/keyscope.js')),
      );
    }
  });

  it('give V8 a larger young generation than it has by default', () => {
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
    expect(available(KEYSCOPE_NODE_FLAGS) - available([])).toBeGreaterThan(100 * 1024 * 1024);
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
    expect(newSpaceBytes(KEYSCOPE_NODE_FLAGS)).toBeGreaterThanOrEqual(64 * 1024 * 1024);
  });

  it('run the installed bin/keyscope.js when given to node, as docs/configuration.md says', () => {
    const bin = new URL('services/analyzer/bin/keyscope.js', root).pathname;
    const help = execFileSync(process.execPath, [...KEYSCOPE_NODE_FLAGS, bin, 'analyze', '--help'], {
      encoding: 'utf8',
    });
    expect(help).toMatch(/^usage: keyscope analyze/);
    const docs = readFileSync(new URL('docs/configuration.md', root), 'utf8').replace(/\s+/g, ' ');
    expect(docs).toContain(`node ${KEYSCOPE_NODE_FLAGS.join(' ')} bin/keyscope.js serve`);
  });

  it('are added by bin/keyscope.js started without them, which stops keyscope on Ctrl-C', async () => {
    const bin = new URL('services/analyzer/bin/keyscope.js', root).pathname;
    const args = [
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
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    // Its own process group, as a shell gives a command; Ctrl-C signals the whole group.
    const command = spawn(process.execPath, [bin, ...args], { env, detached: true });
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
    expect(service).toEqual(expect.arrayContaining([process.execPath, ...KEYSCOPE_NODE_FLAGS, bin, ...args]));
    // The command's group is the terminal's foreground group; keyscope runs in a group of its own.
    process.kill(-command.pid!, 'SIGINT');
    expect(await exited).toBe(0);
    expect(output).toMatch(/^keyscope: SIGINT, stopping\nkeyscope: stopped$/m);
  });
});

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
