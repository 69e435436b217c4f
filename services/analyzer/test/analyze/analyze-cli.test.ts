import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeTraces } from '@keyscope/otlp';
import { scenarios, simulate, simulateBatches, splitIntoPayloads } from '@keyscope/simulator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    expect(Object.keys(report)).toEqual(['findings', 'incidents', 'scopes', 'routingEvents']);
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

/** Runs `command` with bash (for PIPESTATUS); the package.json script stands for `pnpm -s keyscope`. */
function pipeline(command: string): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd: repositoryRoot });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const KEYSCOPE_SCRIPT = (
  JSON.parse(readFileSync(join(repositoryRoot, 'package.json'), 'utf8')) as { scripts: { keyscope: string } }
).scripts.keyscope;

/** 141: what a shell reports for a program killed by SIGPIPE (128 + 13). */
const CLOSED_PIPE_STATUS = 141;

describe('keyscope analyze in a pipe', () => {
  /** A failover twice the size of the shared one: its JSON report outgrows a pipe's 64 KiB buffer. */
  let archiveLargerThanPipe: string;
  beforeAll(() => {
    const { spans } = simulate(scenarios.nodeFailover({ requests: 1_200, nonMutationSpanFraction: 0.3 }), {
      seed: 1,
    });
    archiveLargerThanPipe = temporaryFolder();
    writeInput(join(archiveLargerThanPipe, 'export.jsonl.gz'), jsonLines(splitIntoPayloads(spans, 12, 1)));
  }, 30_000);
  afterAll(() => rmSync(archiveLargerThanPipe, { recursive: true, force: true }));

  it('ends quietly with status 141 when head -c 100 closes the pipe mid-report', async () => {
    const whole = await keyscope('analyze', '--format', 'json', archiveLargerThanPipe);
    expect(whole.code).toBe(0);
    expect(Buffer.byteLength(whole.stdout)).toBeGreaterThan(65_536);

    const run = await pipeline(
      `${KEYSCOPE_SCRIPT} analyze --format json ${shellQuote(archiveLargerThanPipe)} | head -c 100; exit "\${PIPESTATUS[0]}"`,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(CLOSED_PIPE_STATUS);
    expect(run.stdout).toBe(whole.stdout.slice(0, 100));
  }, 60_000);

  // The report written at once (table, json) and in chunks as made (csv, ndjson).
  it.each(['table', 'csv'])(
    'ends quietly with status 141 in --format %s when the reader has already gone',
    async (format) => {
      const child = spawn(process.execPath, [...CLI, 'analyze', '--format', format, archive], {
        cwd: repositoryRoot,
      });
      // No reader at all: the first write of the report meets a closed pipe.
      child.stdout.destroy();
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(stderr).toBe('');
      expect(code).toBe(CLOSED_PIPE_STATUS);
    },
    60_000,
  );

  it('hands jq the JSON report alone, and ndjson rows it reads line by line', async () => {
    const direct = JSON.parse((await keyscope('analyze', '--format', 'json', archive)).stdout) as {
      incidents: { title: string }[];
      findings: unknown[];
    };
    const titles = await pipeline(
      `set -o pipefail; ${KEYSCOPE_SCRIPT} analyze --format json ${shellQuote(archive)} | jq -r '.incidents[] | .title'`,
    );
    expect(titles.stderr).toBe('');
    expect(titles.code).toBe(0);
    expect(titles.stdout.trimEnd().split('\n')).toEqual(direct.incidents.map((incident) => incident.title));

    const findings = await pipeline(
      `set -o pipefail; ${KEYSCOPE_SCRIPT} analyze --format ndjson ${shellQuote(archive)} | jq -s '[.[].findingId] | unique | length'`,
    );
    expect(findings.stderr).toBe('');
    expect(findings.code).toBe(0);
    expect(Number(findings.stdout)).toBe(direct.findings.length);
  }, 90_000);
});

describe.skipIf(!hasScript())('keyscope analyze on a terminal, over a large archive', () => {
  /** About 600,000 spans of the simulator's benchmark: hundreds of findings in a score of incidents. */
  const SPANS = 600_000;
  let large: string;
  beforeAll(() => {
    large = temporaryFolder();
    const run = simulateBatches(scenarios.benchmark({ spans: SPANS }), { seed: 1, batchSize: 512 });
    let i = 0;
    // One .pb per export, written as made: the archive is never whole in this process's memory.
    for (const batch of run.batches) {
      writeFileSync(join(large, `traces-${String(i++).padStart(5, '0')}.pb`), encodeTraces(batch));
    }
  }, 60_000);
  afterAll(() => rmSync(large, { recursive: true, force: true }));

  /** The report as a terminal of `columns` columns shows it: stdout only, colour codes taken out. */
  async function reportOnTerminal(columns: number): Promise<string[]> {
    const command = [process.execPath, ...CLI, 'analyze', large].map(shellQuote).join(' ');
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn('script', ['-qec', `stty cols ${columns}; ${command} 2>/dev/null`, '/dev/null'], {
        cwd: repositoryRoot,
      });
      let text = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`exit ${code}: ${text}`))));
    });
    const colour = new RegExp(`${String.fromCharCode(27)}\\[[\\d;]*m`, 'g');
    return output.replace(colour, '').split(/\r?\n/);
  }

  /** Columns a line takes, counted apart from the report's own code: printable ASCII and … – only. */
  function columnsOf(line: string): number {
    const chars = [...line];
    expect(
      chars.filter((char) => !/^[\x20-\x7e…–]$/.test(char)),
      line,
    ).toEqual([]);
    return chars.length;
  }

  it.each([80, 160])(
    'fits every line of the table in %i columns and counts what --limit leaves out',
    async (columns) => {
      const lines = await reportOnTerminal(columns);
      expect(lines.some((line) => /^Incidents \(\d+\) and their findings \([\d,]+\)$/.test(line))).toBe(true);
      for (const line of lines) expect(columnsOf(line), line).toBeLessThanOrEqual(columns);
      // The terminal's width is used, not a fixed one.
      expect(Math.max(...lines.map(columnsOf))).toBeGreaterThan(columns - 10);
      expect(lines.join('\n')).toMatch(/[\d,]+ more findings not shown: --limit 0 shows all/);
      // At most 20 findings shown by default: their rows start with the four-space indent and a key.
      const rows = lines.filter((line) => /^ {4}[0-9a-f]{8}-|^ {4}ord-/.test(line));
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.length).toBeLessThanOrEqual(20);
    },
    60_000,
  );
});
