/**
 * A bounded measurement of what many distinct operations cost `keyscope serve` (not a section of
 * `pnpm bench`, and no test): 250,000 keyed decisions, each named by its own URL
 * (`POST /payments/<uuid>`, no `http.route`), sent over OTLP/HTTP to the CLI's serve in a
 * process of its own; then the resident set, the scope report's first page, and what a one-span
 * export costs, before and after a restart. Run twice: with the mapping's defaults (the URLs
 * collapse to one operation) and with `collapseOperationIds: false` (detector.maxTiers caps the
 * tiers, the rest go to the overflow bucket).
 *
 *   node --import tsx bench/tier-cardinality.ts [spans]
 *
 * Prints one JSON line per run. Everything listens on 127.0.0.1; the database is a temporary file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resource, serverSpan } from '@keyscope/attempts/testing';
import { encodeTraces, type Span } from '@keyscope/otlp';

const SPANS = Number(process.argv[2] ?? 250_000);
const PER_PAYLOAD = 512;
const CONCURRENT = 4;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Running {
  child: ChildProcess;
  api: string;
  otlp: string;
}

/** `keyscope serve` as the CLI runs it, on ports it picks; resolves once both listen. */
function startServe(configFile: string): Promise<Running> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'services/analyzer/src/cli.ts', 'serve', '--config', configFile],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let api = '';
    let otlp = '';
    let out = '';
    const exited = (code: number | null) => reject(new Error(`serve exited with ${code}: ${out}`));
    child.once('exit', exited);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      api ||= /api listening on (http:\/\/\S+)/.exec(out)?.[1] ?? '';
      otlp ||= /otlp-http listening on (http:\/\/\S+)/.exec(out)?.[1] ?? '';
      if (api !== '' && otlp !== '') {
        child.off('exit', exited);
        resolve({ child, api, otlp });
      }
    });
  });
}

async function stop(running: Running): Promise<void> {
  const exited = new Promise((resolve) => running.child.once('exit', resolve));
  running.child.kill('SIGTERM');
  await exited;
}

/** VmRSS and VmHWM of the serve process, in MiB. */
function memoryOf(running: Running): { rssMiB: number; peakRssMiB: number } {
  const status = readFileSync(`/proc/${running.child.pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]);
  return { rssMiB: Math.round(kib('VmRSS') / 1024), peakRssMiB: Math.round(kib('VmHWM') / 1024) };
}

let nextId = 1;
function decision(name: string): Span {
  const id = nextId++;
  return serverSpan({
    key: `order-${id}-${randomUUID()}`,
    outcome: 'miss',
    scope: 'node',
    name,
    trace: id,
    id,
    startMillis: Date.now() - 2_000,
    resource: resource({ service: 'payments', instance: `payments-${id % 4}` }),
  });
}

async function post(running: Running, body: Uint8Array): Promise<void> {
  const response = await fetch(`${running.otlp}/v1/traces`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/x-protobuf' },
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`OTLP/HTTP answered ${response.status}`);
}

/** Sends `SPANS` decisions named by URL, `CONCURRENT` payloads at a time; spans per second. */
async function sendUrlNamed(running: Running): Promise<number> {
  const started = performance.now();
  let sent = 0;
  const worker = async () => {
    while (sent < SPANS) {
      const count = Math.min(PER_PAYLOAD, SPANS - sent);
      sent += count;
      const spans = Array.from({ length: count }, () => decision(`POST /payments/${randomUUID()}`));
      await post(running, encodeTraces(spans));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENT }, worker));
  return Math.round(SPANS / ((performance.now() - started) / 1000));
}

/** Milliseconds from sending a payload of one span to its answer: the median of 9, and the worst. */
async function oneSpanExport(running: Running): Promise<{ medianMillis: number; maxMillis: number }> {
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    const body = encodeTraces([decision(`POST /payments/${randomUUID()}`)]);
    const started = performance.now();
    await post(running, body);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { medianMillis: round(times[4]!), maxMillis: round(times[8]!) };
}

async function scopesPage(running: Running) {
  const response = await fetch(`${running.api}/api/v1/scopes`);
  const text = await response.text();
  const body = JSON.parse(text) as { items: unknown[]; overflow: { tiers: number } | null };
  return { bytes: text.length, items: body.items.length, overflowTiers: body.overflow?.tiers ?? 0 };
}

async function metric(running: Running, name: string): Promise<number | undefined> {
  const text = await (await fetch(`${running.api}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

function round(millis: number): number {
  return Math.round(millis * 10) / 10;
}

async function run(label: string, mapping: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'keyscope-tiers-bench-'));
  try {
    const mappingFile = join(dir, 'mapping.yaml');
    writeFileSync(mappingFile, mapping === '' ? '{}\n' : mapping);
    const configFile = join(dir, 'keyscope.yaml');
    writeFileSync(
      configFile,
      [
        'api: { host: 127.0.0.1, port: 0 }',
        'otlp: { http: { host: 127.0.0.1, port: 0 }, grpc: { host: 127.0.0.1, port: 0 } }',
        `db: { path: ${JSON.stringify(join(dir, 'keyscope.db'))} }`,
        `mapping: { file: ${JSON.stringify(mappingFile)} }`,
        '',
      ].join('\n'),
    );
    let running = await startServe(configFile);
    const spansPerSecond = await sendUrlNamed(running);
    const afterLoad = memoryOf(running);
    const exportAfterLoad = await oneSpanExport(running);
    const scopes = await scopesPage(running);
    const tiers = await metric(running, 'keyscope_tiers');
    const overflowAttempts = await metric(running, 'keyscope_tiers_overflow_total');
    await stop(running);
    running = await startServe(configFile);
    const exportAfterRestart = await oneSpanExport(running);
    const afterRestart = memoryOf(running);
    await stop(running);
    console.log(
      JSON.stringify({
        run: label,
        spans: SPANS,
        spansPerSecond,
        ...afterLoad,
        tiers,
        overflowAttempts,
        scopesFirstPage: scopes,
        oneSpanExport: exportAfterLoad,
        oneSpanExportAfterRestart: exportAfterRestart,
        rssAfterRestartMiB: afterRestart.rssMiB,
      }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await run('defaults (URLs collapse)', '');
await run('collapseOperationIds: false (detector.maxTiers caps)', 'collapseOperationIds: false\n');
