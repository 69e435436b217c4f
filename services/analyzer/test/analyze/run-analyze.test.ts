import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { createTextSink } from '@keyscope/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { displayWidth } from '../../src/analyze/display-width.ts';
import { type AnalyzeOptions, runAnalyze } from '../../src/analyze/run-analyze.ts';
import { EXECUTION_COLUMNS } from '../../src/presentation/finding-export.ts';
import { csvObjects, parseCsv } from '../api/export-csv.ts';
import {
  collectorJsonLines,
  jsonLines,
  jsonRequest,
  protobufRequest,
  type SimulatedFailover,
  simulatedFailover,
  temporaryFolder,
  writeInput,
} from './simulated-archive.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** runAnalyze in this process, its output captured; stdout and stderr are pipes unless told. */
async function analyze(
  paths: string[],
  options: Partial<Omit<AnalyzeOptions, 'paths'>> & {
    stdin?: Uint8Array;
    stdoutTTY?: boolean;
    stdoutColumns?: number;
  } = {},
): Promise<Run> {
  const stdout = createTextSink({ isTTY: options.stdoutTTY ?? false, columns: options.stdoutColumns });
  const stderr = createTextSink();
  const code = await runAnalyze(
    {
      paths,
      format: options.format ?? 'json',
      mappingFile: options.mappingFile,
      keepGoing: options.keepGoing ?? false,
      maxRecordBytes: options.maxRecordBytes ?? 64 * 1024 * 1024,
      widthColumns: options.widthColumns,
      limit: options.limit,
      ...(options.threads === undefined ? {} : { threads: options.threads }),
    },
    {
      stdout,
      stderr,
      stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
      env: {},
    },
  );
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

function findingKeys(run: Run): string[] {
  const report = JSON.parse(run.stdout) as { findings: { key: string }[] };
  return report.findings.map((finding) => finding.key).sort();
}

/** `file: line 3 (byte 120): … (KS_…)` → its parts, for assertions that do not depend on wording. */
function badRecordLine(stderr: string, file: string): { line?: number; byte: number; code: string } {
  const escaped = file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(
    `${escaped}: (?:line (\\d+) \\()?byte (\\d+)(?: decompressed)?\\)?: .* \\((KS_[A-Z_0-9]+)\\)`,
  ).exec(stderr);
  expect(match, `no bad-record line for ${file} in: ${stderr}`).not.toBeNull();
  return {
    ...(match![1] === undefined ? {} : { line: Number(match![1]) }),
    byte: Number(match![2]),
    code: match![3]!,
  };
}

let failover: SimulatedFailover;
beforeAll(() => {
  failover = simulatedFailover();
  expect(failover.truthKeys.length).toBeGreaterThan(0);
});

describe('keyscope analyze input formats', () => {
  const layouts: [string, (dir: string) => string][] = [
    [
      'a protobuf request body (.pb)',
      (dir) => writeInput(join(dir, 'export.pb'), protobufRequest(failover.spans)),
    ],
    [
      'an OTLP/JSON request (.json)',
      (dir) => writeInput(join(dir, 'export.json'), jsonRequest(failover.spans)),
    ],
    ['JSON lines (.jsonl)', (dir) => writeInput(join(dir, 'export.jsonl'), jsonLines(failover.requests))],
    [
      'a gzipped protobuf request (.pb.gz)',
      (dir) => writeInput(join(dir, 'export.pb.gz'), protobufRequest(failover.spans)),
    ],
    [
      'a gzipped OTLP/JSON request (.json.gz)',
      (dir) => writeInput(join(dir, 'export.json.gz'), jsonRequest(failover.spans)),
    ],
    [
      'gzipped JSON lines (.jsonl.gz)',
      (dir) => writeInput(join(dir, 'export.jsonl.gz'), jsonLines(failover.requests)),
    ],
    [
      'a pretty-printed OTLP/JSON request (.json)',
      (dir) =>
        writeInput(
          join(dir, 'export.json'),
          JSON.stringify(JSON.parse(jsonRequest(failover.spans)), null, 2),
        ),
    ],
    [
      'a gzipped file without .gz in its name',
      (dir) => {
        const path = join(dir, 'export.jsonl');
        writeFileSync(path, gzipSync(jsonLines(failover.requests)));
        return path;
      },
    ],
  ];

  it.each(layouts)('finds every simulated duplicate in %s', async (_name, write) => {
    const run = await analyze([write(temporaryFolder())]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(findingKeys(run)).toEqual(failover.truthKeys);
  });

  it('reads a gzipped JSON lines file written the way the Collector file exporter writes it', async () => {
    // Rotated as `traces-<time>.json` and gzipped afterwards (by logrotate, say): JSON lines inside.
    const dir = temporaryFolder();
    const rotated = writeInput(
      join(dir, 'traces-2025-06-02T09-00-31.123.json.gz'),
      collectorJsonLines(failover.requests),
    );
    const run = await analyze([rotated]);
    expect(run.stderr).toBe('');
    expect(findingKeys(run)).toEqual(failover.truthKeys);
    const asJsonl = await analyze([
      writeInput(join(dir, 'traces.jsonl.gz'), collectorJsonLines(failover.requests)),
    ]);
    expect(findingKeys(asJsonl)).toEqual(failover.truthKeys);
  });

  it('reads the checked-in Collector export of one payment executed on two nodes', async () => {
    const fixture = new URL('../fixtures/analyze/duplicate-payment-collector-export.jsonl', import.meta.url);
    const dir = temporaryFolder();
    const run = await analyze([writeInput(join(dir, 'export.jsonl.gz'), readFileSync(fixture))]);
    const report = JSON.parse(run.stdout);
    // Node a's SERVER span ended in ERROR (504, "client went away") and says nothing of its
    // effect: the repeat on node b is reported, as a suspected duplicate, not a confirmed one.
    expect(report.findings).toMatchObject([
      {
        key: '9d4e1f0a-7c55-4a7e-b1e2-cc0ffee00001',
        class: 'suspected_duplicate',
        cause: 'effect_unknown',
        severity: 'high',
        stores: ['redis-node-a', 'redis-node-b'],
        executions: 2,
      },
    ]);
  });

  it('reads a folder mixing every format, recursively, and skips and reports other files', async () => {
    const dir = temporaryFolder();
    const [a, b, c, d, e, f] = failover.requests.length >= 6 ? chunk(failover.requests, 6) : [];
    writeInput(join(dir, 'a', 'first.pb'), protobufRequest(a!.flat()));
    writeInput(join(dir, 'a', 'second.pb.gz'), protobufRequest(b!.flat()));
    writeInput(join(dir, 'b', 'deeper', 'third.json'), jsonRequest(c!.flat()));
    writeInput(join(dir, 'b', 'fourth.json.gz'), jsonRequest(d!.flat()));
    writeInput(join(dir, 'c.jsonl'), jsonLines(e!));
    writeInput(join(dir, 'd.jsonl.gz'), collectorJsonLines(f!));
    writeInput(join(dir, 'README.txt'), 'exported on the night of the failover');
    writeInput(join(dir, 'b', 'collector.log'), 'level=info');

    const run = await analyze([dir], { format: 'table' });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/files\s+6 read, 2 skipped/);
    expect(run.stderr).toContain('skipped 2 files');
    expect(run.stderr).toContain(join(dir, 'README.txt'));
    expect(run.stderr).toContain(join(dir, 'b', 'collector.log'));
    const json = await analyze([dir]);
    expect(findingKeys(json)).toEqual(failover.truthKeys);
  });

  it('reads JSON lines from stdin for -', async () => {
    const run = await analyze(['-'], { stdin: gzipSync(jsonLines(failover.requests)) });
    expect(run.code).toBe(0);
    expect(findingKeys(run)).toEqual(failover.truthKeys);
  });

  it('reports the same on one thread as on four, bad records and where it stops included', async () => {
    const dir = temporaryFolder();
    failover.requests.forEach((request, i) => {
      writeInput(join(dir, `r-${String(i).padStart(2, '0')}.pb`), protobufRequest(request));
    });
    // A cut request between good ones, and JSON lines with a bad line among good ones.
    writeInput(join(dir, 'r-05-cut.pb'), protobufRequest(failover.requests[5]!).subarray(0, 40));
    const lines = jsonLines(failover.requests.slice(0, 4)).split('\n');
    lines.splice(2, 0, '{"resourceSpans": 7}');
    writeInput(join(dir, 'r-07.jsonl'), lines.join('\n'));
    for (const keepGoing of [true, false]) {
      for (const format of ['json', 'table'] as const) {
        const one = await analyze([dir], { keepGoing, format, threads: 1 });
        const four = await analyze([dir], { keepGoing, format, threads: 4 });
        expect(four).toEqual(one);
        expect(one.code).toBe(keepGoing ? 0 : 1);
      }
    }
    const kept = await analyze([dir], { keepGoing: true, threads: 4 });
    expect(kept.stderr.match(/skipping/g)).toHaveLength(2);
    expect(findingKeys(kept).length).toBeGreaterThan(0);
  });

  it('reads each file once when it is named twice', async () => {
    const dir = temporaryFolder();
    const path = writeInput(join(dir, 'export.jsonl'), jsonLines(failover.requests));
    const run = await analyze([path, dir, path], { format: 'table' });
    expect(run.stdout).toMatch(/files\s+1 read/);
  });
});

describe('keyscope analyze on unreadable input', () => {
  it('refuses a truncated .jsonl.gz, naming the file and the offset where it stops', async () => {
    const dir = temporaryFolder();
    const whole = gzipSync(jsonLines(failover.requests));
    const path = join(dir, 'cut.jsonl.gz');
    writeFileSync(path, whole.subarray(0, Math.floor(whole.length / 2)));
    const run = await analyze([path]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    const bad = badRecordLine(run.stderr, path);
    expect(bad.code).toBe('KS_ANALYZE_TRUNCATED');
    const lines = jsonLines(failover.requests).split('\n');
    const offsets = lines.map((_, i) => Buffer.byteLength(lines.slice(0, i).join('\n')) + (i > 0 ? 1 : 0));
    expect(bad.line).toBeGreaterThan(1);
    expect(bad.byte).toBe(offsets[bad.line! - 1]);
  });

  it('refuses a .pb cut short with the offset the decoder stopped at', async () => {
    const dir = temporaryFolder();
    const whole = protobufRequest(failover.spans);
    const path = join(dir, 'cut.pb');
    writeFileSync(path, whole.subarray(0, whole.length - 10));
    const run = await analyze([path]);
    expect(run.code).toBe(1);
    const bad = badRecordLine(run.stderr, path);
    expect(bad.code).toBe('KS_OTLP_TRUNCATED');
    expect(bad.byte).toBeGreaterThan(0);
    expect(bad.byte).toBeLessThan(whole.length);
  });

  it('refuses a .jsonl whose last line was cut mid-record as truncated', async () => {
    const dir = temporaryFolder();
    const text = jsonLines(failover.requests);
    const path = writeInput(join(dir, 'cut.jsonl'), text.slice(0, text.length - 100));
    const run = await analyze([path]);
    expect(run.code).toBe(1);
    const bad = badRecordLine(run.stderr, path);
    expect(bad).toMatchObject({ code: 'KS_ANALYZE_TRUNCATED', line: failover.requests.length });
  });

  describe('a corrupt JSON line', () => {
    let path: string;
    let corruptLineOffset: number;
    beforeAll(() => {
      const lines = jsonLines(failover.requests).split('\n');
      lines.splice(3, 0, '{"resourceSpans": [{"resource": ');
      const text = lines.join('\n');
      corruptLineOffset = Buffer.byteLength(lines.slice(0, 3).join('\n')) + 1;
      path = writeInput(join(temporaryFolder(), 'export.jsonl.gz'), text);
    });

    it('stops the run, naming the file, the line and its byte offset', async () => {
      const run = await analyze([path]);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(badRecordLine(run.stderr, path)).toEqual({
        line: 4,
        byte: corruptLineOffset,
        code: 'KS_OTLP_JSON',
      });
      expect(run.stderr).toContain('decompressed');
    });

    it('with --keep-going reports it and analyses the rest', async () => {
      const run = await analyze([path], { keepGoing: true });
      expect(run.code).toBe(0);
      expect(badRecordLine(run.stderr, path)).toEqual({
        line: 4,
        byte: corruptLineOffset,
        code: 'KS_OTLP_JSON',
      });
      expect(findingKeys(run)).toEqual(failover.truthKeys);
    });
  });

  it('with --keep-going reports every bad record and file, and exits 0 when something was analysed', async () => {
    const dir = temporaryFolder();
    const good = writeInput(join(dir, 'good.jsonl'), jsonLines(failover.requests));
    const badJson = writeInput(join(dir, 'bad.json'), '{"resourceSpans": 7}');
    const missing = join(dir, 'missing.pb');
    const run = await analyze([good, badJson, missing], { keepGoing: true, format: 'table' });
    expect(run.code).toBe(0);
    // A one-line .json reads as JSON lines (see record-reader.ts), so the line is named too.
    expect(badRecordLine(run.stderr, badJson)).toEqual({ line: 1, byte: 0, code: 'KS_OTLP_JSON' });
    expect(run.stderr).toContain(`${missing}: no such file or directory (KS_ANALYZE_INPUT_UNREADABLE)`);
    expect(run.stdout).toMatch(/bad records\s+2 skipped/);
  });

  it('with --keep-going still exits 1 when nothing could be analysed', async () => {
    const dir = temporaryFolder();
    const run = await analyze([writeInput(join(dir, 'bad.pb'), Buffer.from([0x0a, 0x05, 0x01]))], {
      keepGoing: true,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('KS_ANALYZE_NO_INPUT');
    expect(run.stdout).toBe('');
  });

  it('refuses a missing path without --keep-going before reading anything, naming it', async () => {
    const missing = join(temporaryFolder(), 'nope.jsonl');
    const run = await analyze([missing]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `keyscope analyze: ${missing}: no such file or directory (KS_ANALYZE_INPUT_UNREADABLE)\n`,
    );
  });

  it('suggests --keep-going for a missing path only when there is something else to analyse', async () => {
    const dir = temporaryFolder();
    const good = writeInput(join(dir, 'good.jsonl'), jsonLines(failover.requests));
    const run = await analyze([join(dir, 'nope.jsonl'), good]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('--keep-going skips the paths it cannot read');
    expect(run.stderr).not.toContain('bad record');
  });

  it('exits 1 when no path holds a file it reads', async () => {
    const dir = temporaryFolder();
    writeInput(join(dir, 'notes.txt'), 'nothing here');
    const run = await analyze([dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('KS_ANALYZE_NO_INPUT');
  });

  it('refuses a JSON line larger than the record limit, and skips only that line with --keep-going', async () => {
    const dir = temporaryFolder();
    const big = `${jsonRequest(failover.requests[0]!)}\n`;
    const path = writeInput(join(dir, 'export.jsonl'), big + jsonLines(failover.requests.slice(1)));
    const limit = Buffer.byteLength(big) - 10;
    const stopped = await analyze([path], { maxRecordBytes: limit });
    expect(badRecordLine(stopped.stderr, path)).toEqual({
      line: 1,
      byte: 0,
      code: 'KS_ANALYZE_RECORD_TOO_LARGE',
    });
    const kept = await analyze([path], { maxRecordBytes: limit, keepGoing: true });
    expect(kept.code).toBe(0);
    expect(JSON.parse(kept.stdout).scopes.length).toBeGreaterThan(0);
  });

  it('refuses a .pb file larger than the record limit', async () => {
    const dir = temporaryFolder();
    const path = writeInput(join(dir, 'export.pb'), protobufRequest(failover.spans));
    const run = await analyze([path], { maxRecordBytes: 1024 });
    expect(run.code).toBe(1);
    expect(badRecordLine(run.stderr, path).code).toBe('KS_ANALYZE_RECORD_TOO_LARGE');
  });

  it('refuses a .gz file that is not gzip', async () => {
    const dir = temporaryFolder();
    const path = join(dir, 'export.jsonl.gz');
    writeFileSync(path, jsonLines(failover.requests));
    const run = await analyze([path]);
    expect(badRecordLine(run.stderr, path).code).toBe('KS_ANALYZE_BAD_COMPRESSION');
  });
});

describe('keyscope analyze reports', () => {
  let jsonl: string;
  beforeAll(() => {
    jsonl = writeInput(join(temporaryFolder(), 'export.jsonl'), jsonLines(failover.requests));
  });

  it('--format json prints one object with exactly findings, incidents, scopes and routing events in the API shapes', async () => {
    const run = await analyze([jsonl], { format: 'json' });
    const report = JSON.parse(run.stdout);
    expect(Object.keys(report)).toEqual(['findings', 'incidents', 'scopes', 'routingEvents']);
    expect(Object.keys(report.findings[0]).sort()).toEqual(
      [
        'id',
        'key',
        'class',
        'cause',
        'severity',
        'severityReason',
        'service',
        'operation',
        'tenant',
        'tenants',
        'stores',
        'storesTotal',
        'nodes',
        'nodesTotal',
        'executions',
        'retriedBy',
        'gapMillis',
        'idleMillis',
        'callerWaitMillis',
        'method',
        'retryAfter',
        'firstExecutionMillis',
        'firstExecutionClipped',
        'firstExecutionLost',
        'outlivedCallerWait',
        'routing',
        'incidentId',
        'firstSeen',
        'lastSeen',
        'attempts',
        'attemptsTotal',
        'suspicion',
        'evidenceCapped',
      ].sort(),
    );
    expect(report.findings[0].firstSeen).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(report.incidents.length).toBeGreaterThan(0);
    for (const incident of report.incidents) {
      expect(incident).toMatchObject({ acknowledged: false, acknowledgedAt: null, acknowledgedBy: null });
      expect(report.findings.some((f: { incidentId: string }) => f.incidentId === incident.id)).toBe(true);
    }
    expect(report.scopes[0]).toMatchObject({
      service: 'payments',
      declaredScope: 'node',
      status: 'narrower',
    });
    // The failover's node_down, with the incidents grouped under it, as GET /api/v1/routing-events lists it.
    const nodeDown = report.routingEvents.find((event: { type: string }) => event.type === 'node_down');
    expect(nodeDown).toMatchObject({ service: 'payments', ended: true });
    expect(nodeDown.start).toMatch(/^\d{4}-\d\d-\d\dT/);
    const citing = report.incidents
      .filter(
        (incident: { routingEvent: { id: string } | null }) => incident.routingEvent?.id === nodeDown.id,
      )
      .map((incident: { id: string }) => incident.id);
    expect(citing.length).toBeGreaterThan(0);
    expect(nodeDown.incidentIds).toEqual(citing);
  });

  it('--format table shows the summary, every incident with its routing event, every finding and the scope report', async () => {
    const json = JSON.parse((await analyze([jsonl], { format: 'json' })).stdout);
    // No width limit and no count limit: every value whole.
    const run = await analyze([jsonl], { format: 'table', widthColumns: 0, limit: 0 });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`keys ran twice\\s+${failover.truthKeys.length}\\n`));
    for (const incident of json.incidents) {
      expect(run.stdout).toContain(incident.id);
      expect(run.stdout).toContain(incident.title);
      if (incident.routingEvent !== null) expect(run.stdout).toContain(incident.routingEvent.type);
    }
    for (const key of failover.truthKeys) expect(run.stdout).toContain(key);
    expect(run.stdout).toMatch(/Scope report[\s\S]*payments \/payments\s+node\s+cluster/);
    // Not a terminal: no escape codes.
    expect(run.stdout).not.toContain('\x1b[');
  });

  it('--format table lists the spans it refused, by code, and still reports the old archive', async () => {
    const [first] = failover.spans;
    const unset = { ...first!, spanId: 'f000000000000001', startTimeUnixMillis: 0 };
    const path = writeInput(
      join(temporaryFolder(), 'with-unset-time.jsonl'),
      `${jsonLines(failover.requests)}${jsonRequest([unset])}\n`,
    );
    const run = await analyze([path], { format: 'table' });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/refused spans\s+1 \(KS_SPAN_TOO_OLD 1;/);
    expect(run.stdout).toMatch(new RegExp(`keys ran twice\\s+${failover.truthKeys.length}\\n`));
  });

  it('colours the table only for a terminal', async () => {
    const run = await analyze([jsonl], { format: 'table', stdoutTTY: true });
    expect(run.stdout).toContain('\x1b[1;31mcritical');
  });

  it('prints no progress when stderr is not a terminal', async () => {
    const run = await analyze([jsonl], { format: 'json' });
    expect(run.stderr).toBe('');
  });
});

describe('keyscope analyze --format csv and ndjson', () => {
  let jsonl: string;
  beforeAll(() => {
    jsonl = writeInput(join(temporaryFolder(), 'export.jsonl'), jsonLines(failover.requests));
  });

  it('--format csv writes one row per execution of every finding, and nothing else on stdout', async () => {
    const json = JSON.parse((await analyze([jsonl], { format: 'json' })).stdout) as {
      findings: { id: string; executions: number; attempts: { spanId: string }[] }[];
    };
    const run = await analyze([jsonl], { format: 'csv' });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    const [header] = parseCsv(run.stdout);
    expect(header).toEqual(EXECUTION_COLUMNS);
    const rows = csvObjects(run.stdout);
    expect(rows).toHaveLength(json.findings.reduce((sum, f) => sum + f.executions, 0));
    for (const finding of json.findings) {
      const own = rows.filter((r) => r.findingId === finding.id);
      expect(own).toHaveLength(finding.executions);
      for (const r of own) expect(finding.attempts.map((a) => a.spanId)).toContain(r.spanId);
    }
    expect(new Set(rows.map((r) => r.key))).toEqual(new Set(failover.truthKeys));
  });

  it('--format ndjson writes the same rows as JSON lines', async () => {
    const csv = csvObjects((await analyze([jsonl], { format: 'csv' })).stdout);
    const run = await analyze([jsonl], { format: 'ndjson' });
    const lines = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual(csv);
  });

  it('names the business id the mapping points at', async () => {
    const [key] = failover.truthKeys;
    const spans = failover.spans.map((span) =>
      span.attributes['idempotency.key'] === key && span.attributes['idempotency.outcome'] === 'miss'
        ? { ...span, attributes: { ...span.attributes, 'payment.id': `pay_${span.spanId}` } }
        : span,
    );
    const dir = temporaryFolder();
    const path = writeInput(join(dir, 'export.pb'), protobufRequest(spans));
    const mapping = writeInput(join(dir, 'mapping.yaml'), 'fields:\n  businessId: [payment.id]\n');
    const rows = csvObjects((await analyze([path], { format: 'csv', mappingFile: mapping })).stdout);
    const ofKey = rows.filter((r) => r.key === key);
    expect(ofKey.length).toBeGreaterThanOrEqual(2);
    for (const r of ofKey) expect(r.businessId).toBe(`pay_${r.spanId}`);
  });
});

describe('keyscope analyze --format table in a terminal', () => {
  let jsonl: string;
  beforeAll(() => {
    jsonl = writeInput(join(temporaryFolder(), 'export.jsonl'), jsonLines(failover.requests));
  });

  it.each([40, 80, 160])('fits every line in %i columns, cutting cells with an ellipsis', async (columns) => {
    const run = await analyze([jsonl], { format: 'table', widthColumns: columns });
    const lines = run.stdout.split('\n');
    for (const line of lines) expect(displayWidth(line), line).toBeLessThanOrEqual(columns);
    expect(run.stdout).toContain('…');
    expect(run.stdout.split('\n').some((line) => line.endsWith(' '))).toBe(false);
  });

  it("takes the terminal's width, and 80 columns when stdout is not a terminal", async () => {
    const wide = await analyze([jsonl], { format: 'table', stdoutTTY: true, stdoutColumns: 200 });
    const piped = await analyze([jsonl], { format: 'table', stdoutColumns: 200 });
    const colour = new RegExp(`${String.fromCharCode(27)}\\[[\\d;]*m`, 'g');
    const widest = (text: string) =>
      Math.max(...text.split('\n').map((line) => displayWidth(line.replace(colour, ''))));
    expect(widest(wide.stdout)).toBeGreaterThan(80);
    expect(widest(wide.stdout)).toBeLessThanOrEqual(200);
    expect(widest(piped.stdout)).toBeLessThanOrEqual(80);
  });

  it('groups the findings under their incidents, each incident line followed by its title and findings', async () => {
    const json = JSON.parse((await analyze([jsonl], { format: 'json' })).stdout) as {
      incidents: { id: string; title: string }[];
      findings: { key: string; incidentId: string }[];
    };
    const lines = (await analyze([jsonl], { format: 'table', widthColumns: 0, limit: 0 })).stdout.split('\n');
    for (const finding of json.findings) {
      const row = lines.findIndex((line) => line.startsWith(`    ${finding.key} `));
      const headline = lines.slice(0, row).findLastIndex((line) => /^ {2}inc_/.test(line));
      expect(lines[headline]).toContain(finding.incidentId);
      const incident = json.incidents.find((i) => i.id === finding.incidentId)!;
      expect(lines[headline + 1]).toBe(`    ${incident.title}`);
    }
  });

  it('--limit shows at most that many incidents and findings, and counts the rest', async () => {
    const json = JSON.parse((await analyze([jsonl], { format: 'json' })).stdout) as {
      incidents: unknown[];
      findings: { key: string }[];
    };
    expect(json.findings.length).toBeGreaterThan(3);
    const run = await analyze([jsonl], { format: 'table', limit: 3, widthColumns: 0 });
    const shown = json.findings.filter((f) => run.stdout.includes(`    ${f.key} `));
    expect(shown).toHaveLength(3);
    const hiddenIncidents = Math.max(0, json.incidents.length - 3);
    const hidden = json.findings.length - 3;
    const incidents =
      hiddenIncidents > 0 ? `${hiddenIncidents} more incident${hiddenIncidents === 1 ? '' : 's'} and ` : '';
    expect(run.stdout).toContain(`… ${incidents}${hidden} more findings not shown: --limit 0 shows all`);
    const all = await analyze([jsonl], { format: 'table', limit: 0, widthColumns: 0 });
    expect(json.findings.every((f) => all.stdout.includes(`    ${f.key} `))).toBe(true);
    expect(all.stdout).not.toContain('not shown');
  });

  it('shows a key that would steer the terminal as harmless text, within the width', async () => {
    const [key] = failover.truthKeys;
    const hostile = '\x1b[2J\x1b]0;pwned\x07支付-\u202e';
    const spans = failover.spans.map((span) =>
      span.attributes['idempotency.key'] === key
        ? { ...span, attributes: { ...span.attributes, 'idempotency.key': hostile + key } }
        : span,
    );
    const path = writeInput(join(temporaryFolder(), 'hostile.pb'), protobufRequest(spans));
    const run = await analyze([path], { format: 'table', widthColumns: 80, limit: 0 });
    const steering = [...run.stdout].filter((char) => {
      const code = char.codePointAt(0)!;
      return (code < 0x20 && char !== '\n') || code === 0x7f || code === 0x202e;
    });
    expect(steering).toEqual([]);
    expect(run.stdout).toContain('\ufffd[2J\ufffd]0;pwned\ufffd支付-\ufffd');
    for (const line of run.stdout.split('\n')) expect(displayWidth(line)).toBeLessThanOrEqual(80);
  });
});

function chunk<T>(items: readonly T[], parts: number): T[][] {
  const size = Math.ceil(items.length / parts);
  return Array.from({ length: parts }, (_, i) => items.slice(i * size, (i + 1) * size));
}
