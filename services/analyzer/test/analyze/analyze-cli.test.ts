import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  jsonLines,
  protobufRequest,
  simulatedFailover,
  temporaryFolder,
  writeInput,
} from './simulated-archive.ts';

/** The process boundary: exit statuses, what goes to which stream, and the terminal. */

const repositoryRoot = fileURLToPath(new URL('../../../../', import.meta.url));
const CLI = ['--import', 'tsx', 'services/analyzer/src/cli.ts'];
const ERASE_LINE = '\r\x1b[K';

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function keyscope(...args: string[]): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI, ...args], { cwd: repositoryRoot });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** util-linux `script` runs a command under a pseudo-terminal, the way a person runs it. */
function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/** Runs keyscope under a pseudo-terminal: stdout and stderr both reach the terminal, mixed. */
function keyscopeOnTerminal(...args: string[]): Promise<Exit> {
  const command = [process.execPath, ...CLI, ...args].map(shellQuote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: repositoryRoot,
      env: { ...process.env, COLUMNS: '160' },
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: output, stderr: '' }));
  });
}

let archive: string;
beforeAll(() => {
  const failover = simulatedFailover();
  archive = temporaryFolder();
  // Redelivered copies of one export in two formats: the same findings, and a few MiB to read.
  writeInput(join(archive, 'export.jsonl.gz'), jsonLines(failover.requests));
  writeInput(join(archive, 'export.pb'), protobufRequest(failover.spans));
});

describe('keyscope analyze (process)', () => {
  it('prints only the JSON report on stdout and exits 0 when it ran, with findings', async () => {
    const run = await keyscope('analyze', '--format', 'json', archive);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(Object.keys(report)).toEqual(['findings', 'incidents', 'scopes']);
    expect(report.findings.map((f: { key: string }) => f.key).sort()).toEqual(simulatedFailover().truthKeys);
    // stderr is a pipe here: no progress line.
    expect(run.stderr).toBe('');
  });

  it('exits 1 naming the file and byte offset of the first bad record', async () => {
    const dir = temporaryFolder();
    const path = writeInput(join(dir, 'bad.jsonl'), '{"resourceSpans":[]}\n{"resourceSpans":\n');
    const run = await keyscope('analyze', path);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`${path}: line 2 (byte 21): `);
    expect(run.stderr).toContain('(KS_OTLP_JSON)');
  });

  it('exits 2 naming a bad flag, and documents the exit statuses in --help', async () => {
    const bad = await keyscope('analyze', '--format', 'yaml', archive);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--format');
    const help = await keyscope('analyze', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/exit status: 0 .*, 1 unreadable input .*\n.*2 usage error/);
  });

  it.skipIf(!hasScript())('draws a progress line on a terminal and erases it at the end', async () => {
    const run = await keyscopeOnTerminal('analyze', '--format', 'json', archive);
    expect(run.code).toBe(0);
    // Each drawing starts by returning to column 0 and erasing the line.
    const drawings = run.stdout
      .split(ERASE_LINE)
      .filter((text) =>
        /^\[[= >]{12}\] [\d.]+ [KMG]?i?B \/ [\d.]+ [KMG]?i?B\s+\d+%\s+[\d,]+ spans\s+[\d,]+ spans\/s$/.test(
          text,
        ),
      );
    expect(drawings.length).toBeGreaterThanOrEqual(1);
    // Erased before the report: the JSON starts on a clean line.
    expect(run.stdout).toContain(`${ERASE_LINE}{`);
  });
});
