import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import {
  type RunningService,
  resolveServeConfig,
  runAnalyze,
  silentLogger,
  startServe,
} from '@keyscope/analyzer';
import { createTextSink } from '@keyscope/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Chromium, launchChromium, saveScreenshot } from './chromium.ts';

/**
 * The words on-call reads are one text wherever they read it: the incidents of a recording of real
 * components (HAProxy in front of three nodes, one killed), delivered to serve over OTLP/HTTP on a
 * clock that follows the spans, read on the incident page in headless Chromium, against the title
 * and advice lines of `keyscope analyze --format table` on the same file.
 */
const RECORDING = new URL('../lab/recordings/haproxy-node-killed.jsonl.gz', import.meta.url);

let service: RunningService;
let dir: string;
let browser: Chromium;
let tableText: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-incident-text-'));
  const lines = gunzipSync(readFileSync(RECORDING))
    .toString('utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');
  const lastEnd = (line: string) =>
    Math.max(
      ...[...line.matchAll(/"endTimeUnixNano":"(\d+)"/g)].map((m) => Number(BigInt(m[1]!) / 1_000_000n)),
    );
  let clock = Math.min(...lines.map(lastEnd)) - 60_000;
  service = await startServe(
    resolveServeConfig({
      api: { port: 0 },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
      db: { path: join(dir, 'k.db') },
    }),
    { logger: silentLogger, now: () => clock },
  );
  const otlp = `http://127.0.0.1:${service.addresses.otlpHttp.port}/v1/traces`;
  for (const line of lines) {
    clock = Math.max(clock, lastEnd(line));
    const response = await fetch(otlp, {
      method: 'POST',
      body: line,
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(200);
    service.pipeline.tick(clock);
  }
  for (let second = 0; second < 60; second++) service.pipeline.tick((clock += 1000));

  const stdout = createTextSink();
  const code = await runAnalyze(
    {
      paths: [RECORDING.pathname],
      format: 'table',
      mappingFile: undefined,
      keepGoing: false,
      maxRecordBytes: 64 * 1024 * 1024,
      widthColumns: 0,
      limit: 0,
    },
    { stdout, stderr: createTextSink(), stdin: Readable.from([]), env: {} },
  );
  expect(code).toBe(0);
  tableText = stdout.text();
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe('an incident of the haproxy-node-killed recording', () => {
  it('reads on its page in words the analyze table prints, title and advice alike', async () => {
    const api = `http://127.0.0.1:${service.addresses.api.port}`;
    const { items } = (await (await fetch(`${api}/api/v1/incidents`)).json()) as { items: { id: string }[] };
    expect(items.length).toBeGreaterThan(0);
    const tableLines = tableText.split('\n').map((line) => line.trim());
    const page = await browser.context.newPage();
    for (const { id } of items) {
      await page.goto(`${api}/incidents/${id}`);
      const title = (await page.locator('#incident-title').textContent())!;
      const advice = (await page.locator('section.advice p').first().textContent())!;
      expect(title.startsWith('payments POST /payments: ')).toBe(true);
      expect(advice.length).toBeGreaterThan(0);
      // The table: the incident's id line, then its title and its advice each on one line at width 0.
      expect(tableLines).toContain(title);
      expect(tableLines).toContain(`advice  ${advice}`);
    }
    await saveScreenshot(page, 'incident-text');
    await page.close();
  }, 60_000);
});
