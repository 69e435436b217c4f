import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeTraces } from '@keyscope/otlp';
import { span } from '@keyscope/testkit';
import { afterEach, describe, expect, it } from 'vitest';

const repositoryRoot = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = 'services/analyzer/src/cli.ts';

interface Child {
  process: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

const children: Child[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.process.exitCode === null) child.process.kill('SIGKILL');
});

function keyscope(...args: string[]): Child {
  // Every serve gets a database of its own, away from the repository.
  const db =
    args[0] === 'serve' && !args.includes('--db')
      ? ['--db', join(mkdtempSync(join(tmpdir(), 'keyscope-cli-')), 'k.db')]
      : [];
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args, ...db], { cwd: repositoryRoot });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const handle = { process: child, stdout: () => stdout, stderr: () => stderr, exited };
  children.push(handle);
  return handle;
}

/** Resolves with the lines matching every pattern once all have appeared on stdout. */
async function waitForLines(
  child: Child,
  patterns: RegExp[],
  timeoutMillis = 20_000,
): Promise<RegExpMatchArray[]> {
  const deadline = Date.now() + timeoutMillis;
  while (Date.now() < deadline) {
    const matches = patterns.map((pattern) => child.stdout().match(pattern));
    if (matches.every((match) => match !== null)) return matches as RegExpMatchArray[];
    if (child.process.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `keyscope did not print ${patterns.join(', ')}; stdout: ${child.stdout()} stderr: ${child.stderr()}`,
  );
}

describe('keyscope CLI', () => {
  it('serves on the ports it picked, accepts a payload, and exits 0 on SIGTERM', async () => {
    const child = keyscope('serve', '--otlp-http-port', '0', '--otlp-grpc-port', '0', '--api-port', '0');
    const [http, grpc, api] = await waitForLines(child, [
      /^otlp-http listening on (http:\/\/127\.0\.0\.1:\d+)$/m,
      /^otlp-grpc listening on (127\.0\.0\.1:\d+)$/m,
      /^api listening on (http:\/\/127\.0\.0\.1:\d+)$/m,
    ]);
    expect(grpc?.[1]).toBeDefined();
    expect((await fetch(`${api?.[1]}/readyz`)).status).toBe(200);
    const response = await fetch(`${http?.[1]}/v1/traces`, {
      method: 'POST',
      body: encodeTraces([span({ key: 'k1' })]),
      headers: { 'content-type': 'application/x-protobuf' },
    });
    expect(response.status).toBe(200);
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    expect(child.stdout().match(/listening on/g)).toHaveLength(3);
  });

  it('exits 0 on SIGINT too', async () => {
    const child = keyscope('serve', '--otlp-http-port', '0', '--otlp-grpc-port', '0', '--api-port', '0');
    await waitForLines(child, [/^otlp-grpc listening on /m]);
    child.process.kill('SIGINT');
    expect(await child.exited).toBe(0);
  });

  it('refuses an unknown flag, naming it', async () => {
    const child = keyscope('serve', '--otlp-http-prot', '0');
    expect(await child.exited).toBe(2);
    expect(child.stderr()).toContain('--otlp-http-prot');
    expect(child.stdout()).toBe('');
  });

  it('refuses a port that is not a number, naming the flag', async () => {
    const child = keyscope('serve', '--otlp-grpc-port', 'http');
    expect(await child.exited).toBe(2);
    expect(child.stderr()).toContain('--otlp-grpc-port');
  });

  it('refuses a port above 65535, naming the flag', async () => {
    const child = keyscope('serve', '--api-port', '65536');
    expect(await child.exited).toBe(2);
    expect(child.stderr()).toContain('--api-port');
  });

  it('refuses a config file with an unknown key, naming it', async () => {
    const child = keyscope(
      'serve',
      '--config',
      'services/analyzer/test/fixtures/config-with-unknown-key.yaml',
    );
    expect(await child.exited).toBe(1);
    expect(child.stderr()).toContain('htttp');
  });

  it('exits 2 with usage for an unknown command', async () => {
    const child = keyscope('srve');
    expect(await child.exited).toBe(2);
    expect(child.stderr()).toContain("unknown command 'srve'");
    expect(child.stderr()).toContain('usage: keyscope');
  });

  it('prints serve usage for --help and exits 0', async () => {
    const child = keyscope('serve', '--help');
    expect(await child.exited).toBe(0);
    expect(child.stdout()).toContain('--otlp-http-port');
  });
});
