import type { Machine } from './machine.ts';

/**
 * A goal a measurement is held to: its value (or, with `on: 'ratio'`, its ratio) must be at least
 * (`>=`) or at most (`<=`) `bound`.
 */
export interface Target {
  comparison: '>=' | '<=';
  bound: number;
  on?: 'value' | 'ratio';
}

/** One measurement of one section: one row of the table. */
export interface Row {
  section: string;
  measurement: string;
  /** Median over the section's repetitions. */
  value: number;
  unit: string;
  target?: Target;
  /** This measurement divided by another one of the same run (`against` names it). */
  ratio?: { value: number; against: string };
  /** A correctness check made on the same run (same spans counted, same findings found). */
  check?: { ok: boolean; what: string };
  /** Per-repetition values, for the JSON only. */
  samples?: number[];
  /** What exactly was measured, when the measurement's name cannot say it all. */
  note?: string;
}

export interface ReportRow extends Row {
  /** Undefined when the row has no target. */
  pass?: boolean;
}

export interface Report {
  mode: 'full' | 'quick';
  startedAt: string;
  durationSeconds: number;
  machine: Machine;
  /** Load averages once the run ended: a busy machine makes every figure lower. */
  loadAverageAtEnd: [number, number, number];
  /** How long each section took and how busy the machine was when it started. */
  sections: SectionTiming[];
  rows: ReportRow[];
}

export interface SectionTiming {
  name: string;
  seconds: number;
  /** The 1-minute load average when the section started. */
  loadAverageAtStart: number;
}

export function meetsTarget(row: Row): boolean | undefined {
  const { target } = row;
  if (target === undefined) return undefined;
  const measured = target.on === 'ratio' ? row.ratio?.value : row.value;
  // A ratio that could not be computed meets no target.
  if (measured === undefined || Number.isNaN(measured)) return false;
  return target.comparison === '>=' ? measured >= target.bound : measured <= target.bound;
}

export function reportRow(row: Row): ReportRow {
  const pass = meetsTarget(row);
  return pass === undefined ? { ...row } : { ...row, pass };
}

const HEADERS = ['section', 'measurement', 'value', 'unit', 'target', 'pass', 'ratio', 'check'] as const;
/** Numbers read best aligned on the right. */
const RIGHT_ALIGNED = new Set(['value', 'target', 'ratio']);

/** The report as the text `pnpm bench` prints: machine, table, then the numbered notes. */
export function formatReport(report: Report): string {
  const { machine } = report;
  const lines = [
    `keyscope bench (${report.mode}) · ${report.startedAt} · ${report.durationSeconds.toFixed(0)} s`,
    `machine: ${machine.cpuModel} · ${machine.cores} cores · Node ${machine.node} · load average ${formatLoad(machine.loadAverage)} at start, ${formatLoad(report.loadAverageAtEnd)} at end`,
    '',
  ];
  const notes: string[] = [];
  const cells = report.rows.map((row) => {
    let measurement = row.measurement;
    if (row.note !== undefined) {
      notes.push(row.note);
      measurement += ` [${notes.length}]`;
    }
    return {
      section: row.section,
      measurement,
      value: formatNumber(row.value),
      unit: row.unit,
      target:
        row.target === undefined
          ? ''
          : `${row.target.comparison} ${formatNumber(row.target.bound)}${row.target.on === 'ratio' ? '×' : ''}`,
      pass: row.pass === undefined ? '' : row.pass ? 'pass' : 'FAIL',
      ratio: row.ratio === undefined ? '' : `${formatNumber(row.ratio.value)}× ${row.ratio.against}`,
      check: row.check === undefined ? '' : `${row.check.ok ? '✓' : '✗'} ${row.check.what}`,
    };
  });
  const widths = HEADERS.map((header) =>
    Math.max(header.length, ...cells.map((cell) => cell[header].length)),
  );
  const line = (values: readonly string[]) =>
    values
      .map((value, i) =>
        RIGHT_ALIGNED.has(HEADERS[i]!) ? value.padStart(widths[i]!) : value.padEnd(widths[i]!),
      )
      .join('  ')
      .trimEnd();
  lines.push(line(HEADERS));
  lines.push(line(widths.map((width) => '-'.repeat(width))));
  for (const cell of cells) lines.push(line(HEADERS.map((header) => cell[header])));
  if (notes.length > 0) lines.push('');
  for (const [i, note] of notes.entries()) lines.push(`[${i + 1}] ${note}`);
  if (report.sections.length > 0) {
    const timings = report.sections.map(
      (section) =>
        `${section.name} ${section.seconds.toFixed(0)} s (load ${section.loadAverageAtStart.toFixed(2)})`,
    );
    lines.push('', `sections: ${timings.join(' · ')}`);
  }
  return lines.join('\n');
}

/** Thousands separated above 1,000; three significant digits below. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  if (value === 0) return '0';
  return Number(value.toPrecision(3)).toString();
}

function formatLoad(load: readonly number[]): string {
  return load.map((value) => value.toFixed(2)).join(' ');
}
