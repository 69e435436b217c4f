import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUICK_SIZES } from '../bench-sizes.ts';
import { cpuAffinity } from '../cpu-affinity.ts';
import { median } from '../measure.ts';
import type { Report } from '../table.ts';

const run = promisify(execFile);
const RUN_TS = fileURLToPath(new URL('../run.ts', import.meta.url));
/** tsx located from here, so the test does not depend on the directory vitest runs in. */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** The history section's rows name the sizes of history it measured on: quick mode's here. */
const retained = QUICK_SIZES.history.retainedAttempts.map(
  (n) => `${n.toLocaleString('en-US')} attempts retained`,
);

/** Every row `pnpm bench` reports, by section: the table must never lose one silently. */
const EXPECTED_ROWS: Record<string, string[]> = {
  decode: [
    'protobufjs decode, official protos',
    'keyscope decodeTraces, all attributes',
    'keyscope decodeTraces, service attribute filter',
  ],
  'otlp-http ingest': [
    'OTLP/HTTP protobuf → counting consumer, all attributes',
    'OTLP/HTTP protobuf → counting consumer, service decode filter',
  ],
  detector: [
    'ingest throughput',
    'memory per tracked key',
    'memory per node of the routing window',
    'second execution → finding, p50',
    'second execution → finding, p99',
  ],
  'persisted ingest': [
    'in memory: decode (all attributes) + attempts + detector',
    'in memory: decode (service filter) + attempts + detector',
    'OTLP/HTTP → embedded service → SQLite, committed',
    'same, 4 connections',
    'same, the service pinned to one core',
  ],
  'archive analysis': [
    'keyscope analyze, .pb files → JSON report',
    'keyscope analyze --threads <cores>',
    'keyscope in memory: decode + attempts + detector',
    'keyscope decodeTraces alone, all attributes',
    'baseline: protobufjs decode alone',
    'baseline: protobufjs → rows → DuckDB → GROUP BY',
    'baseline: protobufjs → rows → SQLite → GROUP BY',
  ],
  kafka: [
    'ingest role: traces topic (otlp_proto) → attempts topic',
    'detect role: attempts topic → SQLite + incidents topic',
  ],
  history: [
    ...retained.map((r) => `persisted ingest, ${r}`),
    ...retained.map((r) => `second execution → committed finding p99, ${r}`),
    ...retained.map((r) => `second execution → committed finding p99 at half load, ${r}`),
    ...retained.map((r) => `service peak RSS, ${r}`),
    ...retained.map((r) => `database bytes per attempt, ${r}`),
    ...retained.slice(1).map((r) => `retention: purge an hour of history, ${r}`),
  ],
  flood: ['/healthz slowest answer under a unique-key flood', 'unique keys accepted under the flood'],
};

// Speed is never asserted here: the machine running the tests is shared, and quick mode's sizes
// are too small for their figures to mean anything. What is asserted is that the harness runs
// every section, reports sane values, and that its correctness checks hold.
describe('pnpm bench --quick', () => {
  let dir: string;
  let report: Report;
  let printed: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'keyscope-bench-test-'));
    const out = join(dir, 'report.json');
    const { stdout } = await run(process.execPath, ['--import', TSX, RUN_TS, '--quick', '--out', out], {
      maxBuffer: 16 * 1024 * 1024,
    });
    printed = stdout;
    report = JSON.parse(readFileSync(out, 'utf8')) as Report;
  }, 300_000);

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports every row of every section, in order', () => {
    const expected = Object.entries(EXPECTED_ROWS).flatMap(([section, measurements]) =>
      measurements.map((measurement) => `${section} / ${measurement}`),
    );
    expect(report.rows.map((row) => `${row.section} / ${row.measurement}`)).toEqual(expected);
  });

  it('reports positive finite values with a unit and their repetitions', () => {
    for (const row of report.rows) {
      expect(Number.isFinite(row.value) && row.value > 0, `${row.measurement}: ${row.value}`).toBe(true);
      expect(row.unit).not.toBe('');
      // The pinned row runs once per CPU in each repetition.
      const perRepetition =
        row.measurement === 'same, the service pinned to one core' ? cpuAffinity.cpus().length : 1;
      expect(row.samples?.length, row.measurement).toBe(5 * perRepetition);
    }
  });

  it('judges every row with a target and computes every ratio', () => {
    for (const row of report.rows) {
      if (row.target !== undefined) expect(typeof row.pass, row.measurement).toBe('boolean');
      if (row.ratio !== undefined) expect(Number.isFinite(row.ratio.value) && row.ratio.value > 0).toBe(true);
    }
    const targets = report.rows.filter((row) => row.target !== undefined).map((row) => row.measurement);
    expect(targets).toEqual([
      'keyscope decodeTraces, all attributes',
      'keyscope decodeTraces, service attribute filter',
      'OTLP/HTTP protobuf → counting consumer, all attributes',
      'OTLP/HTTP protobuf → counting consumer, service decode filter',
      'memory per tracked key',
      'second execution → finding, p99',
      'same, the service pinned to one core',
      'baseline: protobufjs decode alone',
      'baseline: protobufjs → rows → DuckDB → GROUP BY',
      `persisted ingest, ${retained.at(-1)}`,
      ...retained.map((r) => `second execution → committed finding p99 at half load, ${r}`),
      `service peak RSS, ${retained.at(-1)}`,
      ...retained.slice(1).map((r) => `retention: purge an hour of history, ${r}`),
      '/healthz slowest answer under a unique-key flood',
    ]);
  });

  it('passes its correctness checks: same spans decoded, every span counted, same findings persisted', () => {
    const checks = report.rows.filter((row) => row.check !== undefined);
    expect(checks.length).toBeGreaterThanOrEqual(4);
    for (const row of checks) expect(row.check?.ok, `${row.measurement}: ${row.check?.what}`).toBe(true);
  });

  it("lists the pinned row's every run with its CPU, once on every CPU per repetition", () => {
    const pinned = report.rows.find((row) => row.measurement === 'same, the service pinned to one core')!;
    const listed = [...pinned.note!.matchAll(/(\d+)k on CPU (\d+) \(in memory (\d+)k\)/g)];
    expect(listed.map((match) => `${match[1]}k`)).toEqual(
      pinned.samples!.map((rate) => `${Math.round(rate / 1000)}k`),
    );
    const perCpu = new Map<number, number>();
    for (const match of listed) perCpu.set(Number(match[2]), (perCpu.get(Number(match[2])) ?? 0) + 1);
    expect(new Map(cpuAffinity.cpus().map((cpu) => [cpu, 5]))).toEqual(perCpu);
    for (const cpu of cpuAffinity.cpus()) {
      const on = pinned.samples!.filter((_, i) => Number(listed[i]![2]) === cpu);
      expect(pinned.note).toContain(`CPU ${cpu} ${Math.round(median(on) / 1000)}k (in memory `);
    }
    expect(pinned.ratio?.against).toBe('in memory (filter), same CPU');
  });

  it('describes the machine it ran on', () => {
    expect(report.mode).toBe('quick');
    expect(report.machine.cores).toBeGreaterThan(0);
    expect(report.machine.node).toBe(process.version);
    expect(report.machine.loadAverage).toHaveLength(3);
  });

  it('prints the same rows as one table after the machine line', () => {
    const lines = printed.split('\n');
    expect(lines[1]).toMatch(/^machine: .+ · \d+ cores · Node v/);
    for (const row of report.rows) expect(printed).toContain(row.measurement);
  });
});

describe('pnpm bench --section detector --detector-baseline', () => {
  it("runs another checkout's detector beside this one's on the same stream and reports the paired ratio", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keyscope-bench-test-'));
    try {
      const out = join(dir, 'report.json');
      // This checkout as its own baseline: the harness is what is under test, not a speed.
      const checkout = fileURLToPath(new URL('../..', import.meta.url));
      await run(
        process.execPath,
        [
          '--import',
          TSX,
          RUN_TS,
          '--quick',
          '--section',
          'detector',
          '--detector-baseline',
          checkout,
          '--out',
          out,
        ],
        { maxBuffer: 16 * 1024 * 1024 },
      );
      const report = JSON.parse(readFileSync(out, 'utf8')) as Report;
      const paired = report.rows.find(
        (row) => row.measurement === 'ingest throughput beside a baseline checkout',
      );
      // Three pairs of samples per repetition.
      expect(paired?.samples).toHaveLength(3 * QUICK_SIZES.repetitions);
      expect(paired?.ratio?.against).toBe('baseline checkout, same stream');
      expect(Number.isFinite(paired?.ratio?.value) && paired!.ratio!.value > 0).toBe(true);
      expect(paired?.note).toContain(checkout.replace(/\/$/, ''));
      expect(paired?.note?.match(/\d+k/g)).toHaveLength(3 * QUICK_SIZES.repetitions);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
