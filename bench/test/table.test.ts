import { describe, expect, it } from 'vitest';
import { formatNumber, formatReport, meetsTarget, type Report, type Row, reportRow } from '../table.ts';

const row = (overrides: Partial<Row>): Row => ({
  section: 'decode',
  measurement: 'keyscope',
  value: 100,
  unit: 'spans/s',
  ...overrides,
});

describe('meetsTarget', () => {
  it('holds a value to its bound in the direction the target says', () => {
    expect(meetsTarget(row({ value: 500, target: { comparison: '>=', bound: 500 } }))).toBe(true);
    expect(meetsTarget(row({ value: 499, target: { comparison: '>=', bound: 500 } }))).toBe(false);
    expect(meetsTarget(row({ value: 201, target: { comparison: '<=', bound: 200 } }))).toBe(false);
  });

  it('holds the ratio, not the value, when the target is on the ratio', () => {
    const target = { comparison: '>=', bound: 5, on: 'ratio' } as const;
    expect(meetsTarget(row({ value: 1, target, ratio: { value: 6, against: 'x' } }))).toBe(true);
    expect(meetsTarget(row({ value: 1000, target, ratio: { value: 4, against: 'x' } }))).toBe(false);
    expect(meetsTarget(row({ value: 1000, target }))).toBe(false);
  });

  it('has no verdict for a row without a target', () => {
    expect(reportRow(row({})).pass).toBeUndefined();
  });
});

describe('formatReport', () => {
  const report: Report = {
    mode: 'full',
    startedAt: '2026-01-01T00:00:00.000Z',
    durationSeconds: 12,
    machine: { cpuModel: 'Test CPU', cores: 2, node: 'v20.0.0', loadAverage: [1, 2, 3] },
    loadAverageAtEnd: [1.5, 2, 3],
    sections: [{ name: 'decode', seconds: 20.4, loadAverageAtStart: 5.61 }],
    rows: [
      reportRow(
        row({
          value: 1_234_567,
          target: { comparison: '>=', bound: 5, on: 'ratio' },
          ratio: { value: 4.04, against: 'protobufjs' },
          note: 'what was measured',
        }),
      ),
      reportRow(row({ measurement: 'persisted', check: { ok: false, what: 'same finding ids' } })),
    ],
  };
  const text = formatReport(report);

  it('starts with the machine and its load', () => {
    expect(text.split('\n')[1]).toBe(
      'machine: Test CPU · 2 cores · Node v20.0.0 · load average 1.00 2.00 3.00 at start, 1.50 2.00 3.00 at end',
    );
  });

  it('shows verdicts, ratios, checks and numbered notes', () => {
    expect(text).toContain('1,234,567');
    expect(text).toContain('>= 5×');
    expect(text).toContain('FAIL');
    expect(text).toContain('4.04× protobufjs');
    expect(text).toContain('✗ same finding ids');
    expect(text).toContain('keyscope [1]');
    expect(text).toContain('[1] what was measured');
  });

  it('ends with how long each section took under which load', () => {
    expect(text.split('\n').at(-1)).toBe('sections: decode 20 s (load 5.61)');
  });
});

describe('formatNumber', () => {
  it('separates thousands and keeps three significant digits below them', () => {
    expect(formatNumber(1_234_567.8)).toBe('1,234,568');
    expect(formatNumber(0.48812)).toBe('0.488');
    expect(formatNumber(51.04)).toBe('51');
    expect(formatNumber(Number.NaN)).toBe('NaN');
  });
});
