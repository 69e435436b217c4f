import { availableParallelism } from 'node:os';
import { type AnalyzeOutput, runAnalyze } from '@keyscope/analyzer';
import type { Finding } from '@keyscope/detector';
import { decodeTraces } from '@keyscope/otlp';
import { KEY_ONLY_SQL } from '../baselines/attempt-rows.ts';
import { runBatchApproach } from '../baselines/batch-approach.ts';
import { crossStoreKeysWithDuckDb } from '../baselines/duckdb-batch.ts';
import { crossStoreKeysWithSqlite } from '../baselines/sqlite-batch.ts';
import { detectInMemory } from '../in-memory-detection.ts';
import { median, pairedRatio } from '../measure.ts';
import { decodeWithProtobufjs } from '../protobufjs-decoder.ts';
import type { Section } from '../section.ts';
import type { Row } from '../table.ts';

/** The targets: keyscope end to end at least 5× protobufjs decode alone and 5× DuckDB's batch. */
const BASELINE_TARGET_RATIO = 5;
const AGAINST_ANALYZE = 'keyscope analyze / this';
const SECTION = 'archive analysis';

/**
 * "Did this already happen to us?" over a million archived spans: `keyscope analyze` on `.pb`
 * files (in this process, through the CLI's own `runAnalyze`, JSON report included), keyscope's
 * detection in memory, and what a user would build instead on the same payloads — protobufjs
 * decode alone, and protobufjs decode → rows → DuckDB or SQLite → GROUP BY. All six take turns
 * within each repetition, so each ratio compares runs made under the same load.
 */
export const archiveAnalysisSection: Section = {
  name: SECTION,
  async run(context) {
    const { repetitions } = context.sizes;
    const workload = context.archivePayloads();
    const dir = context.archiveDir();
    // Node Buffers, as readFile would hand them to a user's script: protobufjs decodes strings in
    // Buffers natively, in plain Uint8Arrays with a slower fallback.
    const bodies = workload.bodies.map((body) => Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    const warmupBodies = bodies.slice(0, 20);

    // Untimed warm-up of every contender on a slice of the workload (analyze runs once in full).
    await analyzeFolder(dir);
    detectInMemory(workload, warmupBodies.length, undefined);
    for (const body of warmupBodies) decodeWithProtobufjs(body);
    await runBatchApproach(warmupBodies, crossStoreKeysWithDuckDb);
    await runBatchApproach(warmupBodies, crossStoreKeysWithSqlite);

    const rates = {
      analyze: [],
      oneThread: [],
      memory: [],
      decode: [],
      protobufjs: [],
      duckdb: [],
      sqlite: [],
    } as Record<'analyze' | 'oneThread' | 'memory' | 'decode' | 'protobufjs' | 'duckdb' | 'sqlite', number[]>;
    const rate = (seconds: number) => workload.spans / seconds;
    let analyzed: AnalyzedFolder | undefined;
    let oneThread: AnalyzedFolder | undefined;
    let memory: Finding[] = [];
    let duckdbKeys: string[] = [];
    let sqliteKeys: string[] = [];
    let decodedSpans = 0;
    let decodedByKeyscope = 0;
    for (let i = 0; i < repetitions; i++) {
      analyzed = await analyzeFolder(dir);
      rates.analyze.push(rate(analyzed.seconds));
      oneThread = await analyzeFolder(dir, availableParallelism());
      rates.oneThread.push(rate(oneThread.seconds));

      const inMemory = detectInMemory(workload, workload.bodies.length, undefined);
      memory = inMemory.findings;
      rates.memory.push(rate(inMemory.seconds));

      // keyscope's decoder alone on these payloads: where the in-memory time goes, next to
      // protobufjs on the same bytes (the decode section's payloads are shaped differently).
      let started = performance.now();
      let keyscopeSpans = 0;
      for (const body of bodies) keyscopeSpans += decodeTraces(body).length;
      rates.decode.push(rate((performance.now() - started) / 1000));
      decodedByKeyscope = keyscopeSpans;

      started = performance.now();
      decodedSpans = 0;
      for (const body of bodies) decodedSpans += decodeWithProtobufjs(body);
      rates.protobufjs.push(rate((performance.now() - started) / 1000));

      started = performance.now();
      duckdbKeys = await runBatchApproach(bodies, crossStoreKeysWithDuckDb);
      rates.duckdb.push(rate((performance.now() - started) / 1000));

      started = performance.now();
      sqliteKeys = await runBatchApproach(bodies, crossStoreKeysWithSqlite);
      rates.sqlite.push(rate((performance.now() - started) / 1000));
    }

    const analyzeFindings = analyzed?.findings ?? [];
    const sameFindings = sameSet(
      analyzeFindings.map((finding) => finding.id),
      memory.map((finding) => finding.id),
    );
    const sameAsOneThread = sameSet(
      analyzeFindings.map((finding) => finding.id),
      (oneThread?.findings ?? []).map((finding) => finding.id),
    );
    const crossStore = analyzeFindings.filter((finding) => finding.class === 'cross_store_duplicate');
    const classOf = new Map<string, string[]>();
    for (const finding of analyzeFindings) {
      classOf.set(finding.key, [...(classOf.get(finding.key) ?? []), finding.class]);
    }
    const ratio = (baseline: number[]) => ({
      value: pairedRatio(rates.analyze, baseline),
      against: AGAINST_ANALYZE,
    });

    // Untimed: what the naive query, grouped by key alone, reports on the same rows.
    const keyOnly = (await runBatchApproach(bodies, (rows) => crossStoreKeysWithSqlite(rows, KEY_ONLY_SQL)))
      .length;

    const keyOnlyNote =
      'the query groups by service and key (per dedup tier): grouped by key alone ' +
      `it reports ${keyOnly} keys here, because one request's key reaches every tier it calls`;
    const rows: Row[] = [
      {
        section: SECTION,
        measurement: 'keyscope analyze, .pb files → JSON report',
        value: median(rates.analyze),
        unit: 'spans/s',
        check: {
          ok: sameFindings && analyzed?.exitStatus === 0,
          what: `exit 0, same ${analyzeFindings.length} finding ids as in memory`,
        },
        samples: rates.analyze,
        note:
          `the simulator's benchmark scenario (seed ${context.sizes.seed}): ${workload.spans} spans (~20% ` +
          `mutation attempts) in ${workload.bodies.length} payloads of 512 spans, ` +
          `${(workload.bytes / 2 ** 20).toFixed(0)} MiB, one .pb file each in a folder under the OS temp ` +
          'directory (in the page cache after the warm-up); analyze runs in this process through the ' +
          "CLI's runAnalyze with --format json, from listing the folder to the report's last byte. " +
          'The baselines below start from the payloads already in memory (no file reading): that ' +
          'favours them',
      },
      {
        section: SECTION,
        measurement: 'keyscope analyze --threads <cores>',
        value: median(rates.oneThread),
        unit: 'spans/s',
        ratio: { value: pairedRatio(rates.oneThread, rates.analyze), against: 'analyze' },
        check: { ok: sameAsOneThread, what: 'the same finding ids as on one thread' },
        samples: rates.oneThread,
        note: `one thread per core: ${availableParallelism() - 1} decode and extract, the main thread reads and detects; the row above is the default, one thread`,
      },
      {
        section: SECTION,
        measurement: 'keyscope in memory: decode + attempts + detector',
        value: median(rates.memory),
        unit: 'spans/s',
        ratio: { value: pairedRatio(rates.memory, rates.analyze), against: 'analyze' },
        samples: rates.memory,
      },
      {
        section: SECTION,
        measurement: 'keyscope decodeTraces alone, all attributes',
        value: median(rates.decode),
        unit: 'spans/s',
        ratio: { value: pairedRatio(rates.decode, rates.protobufjs), against: 'protobufjs' },
        check: { ok: decodedByKeyscope === workload.spans, what: `counted ${workload.spans} spans` },
        samples: rates.decode,
        note:
          "these payloads mix many nodes' spans (a collector's forwarding: many resources of 19 " +
          "attributes per payload), unlike the decode section's one-resource SDK exports",
      },
      {
        section: SECTION,
        measurement: 'baseline: protobufjs decode alone',
        value: median(rates.protobufjs),
        unit: 'spans/s',
        target: { comparison: '>=', bound: BASELINE_TARGET_RATIO, on: 'ratio' },
        ratio: ratio(rates.protobufjs),
        check: { ok: decodedSpans === workload.spans, what: `counted ${workload.spans} spans` },
        samples: rates.protobufjs,
        note: 'ExportTraceServiceRequest.decode with the official protos (as in the decode section), no detection at all',
      },
      batchRow(
        'DuckDB',
        rates.duckdb,
        ratio(rates.duckdb),
        duckdbKeys,
        crossStore,
        classOf,
        true,
        keyOnlyNote,
      ),
      batchRow(
        'SQLite',
        rates.sqlite,
        ratio(rates.sqlite),
        sqliteKeys,
        crossStore,
        classOf,
        false,
        keyOnlyNote,
      ),
    ];
    return rows;
  },
};

function batchRow(
  database: 'DuckDB' | 'SQLite',
  rates: number[],
  ratio: Row['ratio'],
  keys: readonly string[],
  crossStore: readonly Finding[],
  classOf: ReadonlyMap<string, string[]>,
  targeted: boolean,
  keyOnlyNote: string,
): Row {
  const found = new Set(keys);
  const missed = crossStore.filter((finding) => !found.has(finding.key)).length;
  const extra = keys.filter((key) => !crossStore.some((finding) => finding.key === key));
  // Keys the query reports beyond keyscope's cross-store findings are still expected to be keys
  // keyscope reported under another class (a downstream tier absorbed the second execution, say):
  // SQL sees two stores, not whether the duplicate had an effect.
  const unexplained = extra.filter((key) => !classOf.has(key)).length;
  const otherClasses = [...new Set(extra.flatMap((key) => classOf.get(key) ?? []))].join(', ');
  const row: Row = {
    section: SECTION,
    measurement: `baseline: protobufjs → rows → ${database} → GROUP BY`,
    value: median(rates),
    unit: 'spans/s',
    ratio,
    check: {
      ok: missed === 0 && unexplained === 0,
      what:
        `all ${crossStore.length} cross_store_duplicate keys` +
        (missed > 0 ? `, ${missed} MISSED` : '') +
        (extra.length > 0 ? `; ${extra.length} more keys (keyscope: ${otherClasses || 'no finding'})` : '') +
        (unexplained > 0 ? `, ${unexplained} with no keyscope finding` : ''),
    },
    samples: rates,
  };
  if (database === 'DuckDB') {
    row.note =
      'decode + flatten + load + query, one in-memory database per repetition; rows are the non-CLIENT ' +
      'spans with idempotency.key and idempotency.outcome (service.name, key, outcome, store): ' +
      `${keyOnlyNote}. DuckDB loads through its appender, SQLite through one prepared INSERT in one ` +
      'transaction. SQL cannot tell a retry from a tenant reusing a key, nor whether a downstream tier ' +
      'absorbed the second execution: only the cross-store keys are compared';
  }
  if (targeted) row.target = { comparison: '>=', bound: BASELINE_TARGET_RATIO, on: 'ratio' };
  return row;
}

interface AnalyzedFolder {
  seconds: number;
  exitStatus: number;
  findings: Finding[];
}

/** `keyscope analyze --format json DIR` in this process; the report is parsed after timing. */
async function analyzeFolder(dir: string, threads?: number): Promise<AnalyzedFolder> {
  const chunks: string[] = [];
  const stdout: AnalyzeOutput = {
    write(text, callback) {
      chunks.push(text);
      callback?.(null);
      return true;
    },
  };
  // Progress and notices go to stderr; with a non-TTY stream analyze writes none of its progress.
  const stderr: AnalyzeOutput = {
    write(_text, callback) {
      callback?.(null);
      return true;
    },
  };
  const started = performance.now();
  const exitStatus = await runAnalyze(
    {
      paths: [dir],
      format: 'json',
      mappingFile: undefined,
      keepGoing: false,
      maxRecordBytes: 64 * 2 ** 20,
      ...(threads === undefined ? {} : { threads }),
    },
    { stdout, stderr, stdin: process.stdin, env: {} },
  );
  const seconds = (performance.now() - started) / 1000;
  const report = JSON.parse(chunks.join('') || '{"findings":[]}') as { findings: Finding[] };
  return { seconds, exitStatus, findings: report.findings };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((id) => set.has(id));
}
