import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type RunningService,
  resolveServeConfig,
  runAnalyze,
  silentLogger,
  startServe,
} from '@keyscope/analyzer';
import { scenarios, simulate } from '@keyscope/simulator';
import { createTextSink } from '@keyscope/testkit';
import { toReadableSpans } from '@keyscope/testkit/sdk';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Forensics without a Collector: a service exports straight to `keyscope serve` with the archive
 * on, through the three OTLP exporters, and `keyscope analyze` run over serve's archive folder
 * finds what serve's API found.
 */
const START = Date.now() - 5 * 60_000;
const { spans, truth } = simulate(scenarios.nodeFailover({ startUnixMillis: START }), { seed: 3 });
const FILE_BYTES = 32 * 1024;

interface Exporter {
  export(spans: ReadableSpan[], done: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
}

interface Finding {
  id: string;
  key: string;
  class: string;
  incidentId: string;
}

let dir: string;
let archive: string;
let service: RunningService;
let api: string;
let exported = 0;
let metricsText = '';
let served: Finding[] = [];

async function get<T>(path: string): Promise<T> {
  const response = await fetch(`${api}${path}`);
  expect(response.status).toBe(200);
  return (await response.json()) as T;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-e2e-archive-'));
  archive = join(dir, 'archive');
  const config = resolveServeConfig({
    api: { port: 0 },
    db: { path: join(dir, 'keyscope.db') },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    archive: { path: archive, fileBytes: FILE_BYTES, maxBytes: 64 * 1024 * 1024 },
  });
  service = await startServe(config, { logger: silentLogger });
  api = `http://127.0.0.1:${service.addresses.api.port}`;
  const http = `http://127.0.0.1:${service.addresses.otlpHttp.port}/v1/traces`;
  const exporters: Exporter[] = [
    new ProtoExporter({ url: http, compression: 'gzip' as never }) as unknown as Exporter,
    new JsonExporter({ url: http }) as unknown as Exporter,
    new GrpcExporter({ url: `http://127.0.0.1:${service.addresses.otlpGrpc.port}` }) as unknown as Exporter,
  ];
  const readable = toReadableSpans(spans);
  for (let i = 0; i < readable.length; i += 256) {
    const exporter = exporters[exported % exporters.length]!;
    const result = await new Promise<{ code: number; error?: Error }>((resolve) =>
      exporter.export(readable.slice(i, i + 256), resolve),
    );
    expect(result.error).toBeUndefined();
    expect(result.code).toBe(0);
    exported++;
  }
  for (const exporter of exporters) await exporter.shutdown();
  // A payload the receiver refuses is not archived.
  const refused = await fetch(http, {
    method: 'POST',
    headers: { 'content-type': 'application/x-protobuf' },
    body: new Uint8Array([0x0a, 0xff, 0xff]),
  });
  expect(refused.status).toBe(400);

  service.pipeline.tick(Date.now());
  served = (await get<{ items: Finding[] }>('/api/v1/findings?limit=500')).items;
  // The archive thread writes behind the answers: wait until it has written every payload.
  const deadline = Date.now() + 10_000;
  while (archived(metricsText) < exported && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    metricsText = await (await fetch(`${api}/metrics`)).text();
  }
  // Stopping finishes the file being written.
  await service.stop();
}, 120_000);

afterAll(async () => {
  await service?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function archived(text: string): number {
  return Number(/^keyscope_archive_payloads_total (\d+)$/m.exec(text)?.[1] ?? 0);
}

async function analyze(paths: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = createTextSink();
  const stderr = createTextSink();
  const code = await runAnalyze(
    { paths, format: 'json', mappingFile: undefined, keepGoing: false, maxRecordBytes: 64 * 1024 * 1024 },
    {
      stdout,
      stderr,
      stdin: process.stdin,
      env: {},
    },
  );
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe("keyscope analyze over serve's archive of a node failover sent by the real OTLP exporters", () => {
  it('finds the same duplicate keys, findings and incidents as serve', async () => {
    expect(served.length).toBe(truth.keys.length);
    const { code, stdout, stderr } = await analyze([archive]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as { findings: Finding[] };
    const summary = (findings: Finding[]) =>
      findings.map((f) => `${f.key} ${f.class} ${f.id} ${f.incidentId}`).sort();
    expect(summary(report.findings)).toEqual(summary(served));
    expect(report.findings.map((f) => `${f.key} ${f.class}`).sort()).toEqual(
      truth.keys.map((k) => `${k.key} ${k.class}`).sort(),
    );
  });

  it('archives every acknowledged payload, and not the one it refused', () => {
    expect(exported).toBeGreaterThan(6);
    expect(archived(metricsText)).toBe(exported);
    expect(metricsText).not.toMatch(/^keyscope_archive_write_failures_total\{[^}]*\} [1-9]/m);
    expect(metricsText).toMatch(/^keyscope_payloads_rejected_total\{[^}]*\} 1$/m);
  });

  it('rotates by size into finished .jsonl.gz files, nothing left being written', () => {
    const names = readdirSync(archive);
    expect(names.length).toBeGreaterThan(2);
    for (const name of names) expect(name).toMatch(/^traces-.*\.jsonl\.gz$/);
  });
});
