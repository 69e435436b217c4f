import type { Attempt } from '@keyscope/attempts';
import { createDetector, type Finding } from '@keyscope/detector';
import { arrival, server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import {
  csvCell,
  csvHeader,
  csvLine,
  EXECUTION_COLUMNS,
  type ExecutionRow,
  executionRows,
  exportChunks,
  ndjsonLine,
  requestedFormat,
} from '../../src/presentation/finding-export.ts';
import { csvObjects, parseCsv } from '../api/export-csv.ts';

/** The findings the detector reports for `attempts`, after its flush. */
function findingsOf(attempts: Attempt[]): Finding[] {
  const detector = createDetector();
  const found = new Map<string, Finding>();
  for (const changes of [
    detector.ingest({ attempts, activity: [], invalid: { outcome: 0, hit: 0, scope: 0 } }),
    detector.flush(),
  ]) {
    for (const finding of changes.findings) found.set(finding.id, finding);
  }
  return [...found.values()];
}

function row(overrides: Partial<ExecutionRow> = {}): ExecutionRow {
  return {
    key: 'k1',
    tenant: 'acme',
    class: 'cross_store_duplicate',
    findingId: 'fnd_1',
    incidentId: 'inc_1',
    store: 'A',
    node: 'a',
    start: '2026-01-01T00:00:00.000Z',
    traceId: '0'.repeat(32),
    spanId: '0'.repeat(16),
    businessId: 'pay_1',
    execution: 'executed',
    ...overrides,
  };
}

describe('execution rows', () => {
  it('gives one row per execution of a duplicate, with its store, node, time, span and business id', () => {
    const [finding] = findingsOf([
      server({ key: 'k1', tenant: 'acme', node: 'a', store: 'A', at: 0, businessId: 'pay_1' }),
      server({ key: 'k1', tenant: 'acme', node: 'b', store: 'B', at: 2, businessId: 'pay_2' }),
    ]);
    const rows = executionRows(finding!);
    expect(rows).toEqual([
      {
        key: 'k1',
        tenant: 'acme',
        class: 'cross_store_duplicate',
        findingId: finding!.id,
        incidentId: finding!.incidentId,
        store: 'A',
        node: 'a',
        start: '2026-01-01T00:00:00.000Z',
        traceId: finding!.attempts[0]!.traceId,
        spanId: finding!.attempts[0]!.spanId,
        businessId: 'pay_1',
        execution: 'executed',
      },
      expect.objectContaining({
        store: 'B',
        node: 'b',
        start: '2026-01-01T00:00:02.000Z',
        businessId: 'pay_2',
      }),
    ]);
  });

  it("takes the business id from the request's SERVER span when the decision span carries none", () => {
    const trace = 'ab'.repeat(16);
    const [finding] = findingsOf([
      arrival({ key: 'k1', node: 'a', traceId: trace, spanId: '1'.repeat(16), at: 0, businessId: 'pay_9' }),
      server({ key: 'k1', node: 'a', store: 'A', traceId: trace, parentSpanId: '1'.repeat(16), at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 2 }),
    ]);
    expect(executionRows(finding!).map((r) => r.businessId)).toEqual(['pay_9', '']);
  });

  it('leaves out hits, other tiers and admissions that failed before their effect, and marks unknown effects', () => {
    const [finding] = findingsOf([
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 2 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 3, outcome: 'hit' }),
      server({ key: 'k1', service: 'ledger', node: 'l', store: 'L', at: 2 }),
    ]);
    const executions = finding!.attempts.filter((a) => a.kind === 'server' && a.outcome === 'miss');
    const evidence: Attempt[] = [
      ...finding!.attempts,
      // Failed after admission: stated as having had no effect, then as unknown.
      server({ key: 'k1', node: 'c', store: 'C', at: 4, statusCode: 503, effect: 'none' }),
      server({ key: 'k1', node: 'd', store: 'D', at: 5, statusCode: 503, effect: 'unknown' }),
    ];
    const rows = executionRows({ ...finding!, attempts: evidence });
    expect(rows.map((r) => [r.store, r.execution])).toEqual([
      ['A', 'executed'],
      ['B', 'executed'],
      ['D', 'unknown'],
    ]);
    expect(executions).toHaveLength(3);
  });

  it('keeps a finding without any execution as one row whose execution columns are empty', () => {
    const [finding] = findingsOf([
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 2 }),
    ]);
    const rows = executionRows({ ...finding!, attempts: [] });
    expect(rows).toEqual([
      expect.objectContaining({ key: 'k1', findingId: finding!.id, store: '', start: '', execution: '' }),
    ]);
  });
});

describe('CSV', () => {
  it('writes the header and one CRLF-terminated line per row, in the columns order', () => {
    expect(csvHeader()).toBe(`${EXECUTION_COLUMNS.join(',')}\r\n`);
    const text = csvHeader() + csvLine(row());
    expect(csvObjects(text)).toEqual([row()]);
  });

  it('quotes fields with commas, quotes and line breaks, doubling the quotes (RFC 4180)', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('cr\r\nlf')).toBe('"cr\r\nlf"');
    const hostile = row({ key: 'k,"1"\r\nx', tenant: 'a"b' });
    expect(parseCsv(csvLine(hostile))).toEqual([
      EXECUTION_COLUMNS.map((column) => (hostile as unknown as Record<string, string>)[column]),
    ]);
  });

  it('puts an apostrophe before a cell a spreadsheet would run as a formula', () => {
    for (const formula of ['=1+1', '+1', '-2+3', '@SUM(A1)', '\tcmd', '\r=x']) {
      expect(csvCell(formula).replace(/^"/, '').startsWith("'")).toBe(true);
    }
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe('"\'=HYPERLINK(""http://x"",""y"")"');
    expect(csvCell('k-1=2')).toBe('k-1=2');
    const [fields] = parseCsv(csvLine(row({ key: '=cmd|" /C calc"!A0' })));
    expect(fields![0]).toBe('\'=cmd|" /C calc"!A0');
  });
});

describe('NDJSON', () => {
  it('writes one JSON object per line with the columns as properties, values as they are', () => {
    const line = ndjsonLine(row({ key: '=1,"x"\n' }));
    expect(line.endsWith('\n')).toBe(true);
    expect(line.slice(0, -1)).not.toContain('\n');
    const parsed = JSON.parse(line);
    expect(Object.keys(parsed)).toEqual(EXECUTION_COLUMNS);
    expect(parsed.key).toBe('=1,"x"\n');
  });
});

describe('export chunks', () => {
  it('reads the next batch only when the previous chunk has been taken', () => {
    const [finding] = findingsOf([
      server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', node: 'b', store: 'B', at: 2 }),
    ]);
    let batchesRead = 0;
    function* batches() {
      for (;;) {
        batchesRead++;
        yield [finding!];
      }
    }
    const chunks = exportChunks('csv', batches());
    expect(chunks.next().value).toBe(csvHeader());
    expect(batchesRead).toBe(0);
    const first = chunks.next().value as string;
    expect(batchesRead).toBe(1);
    expect(parseCsv(first)).toHaveLength(2);
    chunks.next();
    expect(batchesRead).toBe(2);
  });
});

describe('requested format', () => {
  it.each([
    [undefined, undefined, 'json'],
    ['csv', 'application/json', 'csv'],
    ['json', 'text/csv', 'json'],
    [undefined, 'text/csv', 'csv'],
    [undefined, 'application/x-ndjson', 'ndjson'],
    [undefined, 'application/ndjson', 'ndjson'],
    [undefined, 'text/html,application/xhtml+xml,*/*;q=0.8', 'json'],
    [undefined, 'text/csv;q=0.5, application/json', 'json'],
    [undefined, 'application/json;q=0.4, TEXT/CSV', 'csv'],
    [undefined, 'text/csv;q=0', 'json'],
    [undefined, 'constructor, __proto__', 'json'],
  ] as const)('format %s with Accept %s is %s', (query, accept, expected) => {
    expect(requestedFormat(query, accept)).toBe(expected);
  });
});
