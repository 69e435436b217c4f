import type { Finding, Incident, ScopeReportRow, Severity } from '@keyscope/detector';
import type { AnalysisResult } from './analysis.ts';
import { formatBytes } from './progress-meter.ts';

/** What was read, beside what was found. */
export interface ReadSummary {
  readonly files: number;
  readonly skippedFiles: number;
  readonly badRecords: number;
  readonly bytesRead: number;
}

export interface TableOptions {
  /** ANSI colour: only for a terminal (and never with NO_COLOR set); the caller decides. */
  readonly colour: boolean;
}

/** Classes whose findings mean the side effect itself ran twice. */
const RAN_TWICE = new Set(['cross_store_duplicate', 'same_store_duplicate']);

/**
 * `--format table`: the report for a person — a summary, the incidents (what to page about, with
 * the routing event that explains them and the advice), every finding, and the scope report.
 * Columns are aligned by padding; nothing is truncated, because a key is what gets searched for.
 */
export function renderTable(result: AnalysisResult, read: ReadSummary, options: TableOptions): string {
  const style = options.colour ? COLOUR : PLAIN;
  const out: string[] = [];
  const ranTwice = new Set(result.findings.filter((f) => RAN_TWICE.has(f.class)).map((f) => f.key));

  out.push(style.bold('Summary'));
  const counts = result.counts;
  const skipped = read.skippedFiles > 0 ? `, ${count(read.skippedFiles)} skipped (unknown extension)` : '';
  const summary: Cell[][] = [
    ['files', `${count(read.files)} read${skipped}`],
    ['bad records', read.badRecords > 0 ? style.warning(`${count(read.badRecords)} skipped`) : '0'],
    ['bytes read', formatBytes(read.bytesRead)],
    [
      'spans',
      `${count(counts.spans)}${counts.duplicateSpans > 0 ? ` (${count(counts.duplicateSpans)} redelivered, ignored)` : ''}`,
    ],
  ];
  const refused = Object.entries(counts.refusedSpans);
  if (refused.length > 0) {
    const total = refused.reduce((sum, [, n]) => sum + n, 0);
    const codes = refused.map(([code, n]) => `${code} ${count(n)}`).join(', ');
    summary.push([
      'refused spans',
      style.warning(`${count(total)} (${codes}; see docs/configuration.md, Spans)`),
    ]);
  }
  if (counts.firstSpanUnixMillis !== null && counts.lastSpanUnixMillis !== null) {
    summary.push(['traced', formatWindow(counts.firstSpanUnixMillis, counts.lastSpanUnixMillis)]);
  }
  const attempts = counts.attempts;
  summary.push(
    [
      'attempts',
      `${count(attempts.server + attempts.arrival + attempts.client + attempts.effect)}: ${count(attempts.server)} server, ${count(attempts.arrival)} arrival, ${count(attempts.client)} client${attempts.effect > 0 ? `, ${count(attempts.effect)} side effect` : ''}`,
    ],
    ['keys ran twice', ranTwice.size > 0 ? style.critical(count(ranTwice.size)) : '0'],
    ['findings', `${count(result.findings.length)}${breakdown(result.findings.map((f) => f.class))}`],
    ['incidents', `${count(result.incidents.length)}${breakdown(result.incidents.map((i) => i.status))}`],
  );
  out.push(...table(null, summary));

  out.push('', style.bold(`Incidents (${result.incidents.length})`));
  if (result.incidents.length === 0) out.push('  none');
  else {
    out.push(
      ...table(
        ['ID', 'SEVERITY', 'STATUS', 'KEYS', 'ROUTING EVENT', 'WINDOW', 'TITLE'],
        result.incidents.map((i) => incidentRow(i, style)),
      ),
    );
    out.push('', style.bold('Advice'));
    out.push(
      ...table(
        null,
        result.incidents.map((i) => [i.id, i.advice]),
      ),
    );
  }

  out.push('', style.bold(`Findings (${result.findings.length})`));
  if (result.findings.length === 0)
    out.push('  none: no key executed twice and no retry crossed its key scope');
  else {
    out.push(
      ...table(
        ['CLASS', 'KEY', 'SERVICE/OPERATION', 'STORES', 'EXECUTIONS', 'RETRIED BY', 'FIRST SEEN'],
        result.findings.map((f) => findingRow(f, style)),
      ),
    );
  }

  out.push('', style.bold(`Scope report (${result.scopes.length})`));
  if (result.scopes.length === 0) out.push('  none: no span carried an idempotency key');
  else {
    out.push(
      ...table(
        ['SERVICE/OPERATION', 'DECLARED', 'COVERING', 'KEYS', 'SPANNING N/C/R', 'AT RISK', 'STATUS'],
        result.scopes.map((row) => scopeRow(row, style)),
      ),
    );
    out.push('  COVERING: the smallest scope that would have held every observed retry of every key.');
  }
  return `${out.join('\n')}\n`;
}

function incidentRow(incident: Incident, style: Style): Cell[] {
  const event = incident.routingEvent;
  return [
    incident.id,
    style.severity(incident.severity, incident.severity),
    incident.status,
    count(incident.keys),
    event === null ? 'none' : `${event.type} ${event.node || event.cluster || event.region}`,
    event === null
      ? formatWindow(incident.openedUnixMillis, incident.lastFindingUnixMillis)
      : formatWindow(event.startUnixMillis, event.endUnixMillis),
    incident.title,
  ];
}

function findingRow(finding: Finding, style: Style): Cell[] {
  const name = finding.cause === null ? finding.class : `${finding.class} (${finding.cause})`;
  return [
    style.severity(finding.severity, name),
    finding.key,
    `${finding.service} ${finding.operation}`,
    finding.stores.join(', '),
    String(finding.executions),
    finding.retriedBy,
    formatTime(finding.firstSeenUnixMillis),
  ];
}

function scopeRow(row: ScopeReportRow, style: Style): Cell[] {
  const spanning = row.keysSpanning;
  return [
    `${row.service} ${row.operation}`,
    row.declaredScope,
    row.smallestCoveringScope,
    count(row.keys),
    `${count(spanning.nodes)}/${count(spanning.clusters)}/${count(spanning.regions)}`,
    row.keysAtRisk > 0 ? style.warning(count(row.keysAtRisk)) : '0',
    row.status === 'narrower' ? style.critical(row.status) : row.status,
  ];
}

/** A cell's text and, for colour, how to wrap it once padded (escape codes take no columns). */
type Cell = string | { readonly text: string; readonly wrap: (padded: string) => string };

function table(header: readonly string[] | null, rows: readonly Cell[][]): string[] {
  const all: Cell[][] = header === null ? [...rows] : [[...header], ...rows];
  const widths: number[] = [];
  for (const row of all) {
    for (let i = 0; i < row.length; i++) widths[i] = Math.max(widths[i] ?? 0, textOf(row[i]!).length);
  }
  return all.map((row) => {
    const cells = row.map((cell, i) => {
      const text = textOf(cell);
      // The last column is not padded: no trailing spaces.
      const padded = i === row.length - 1 ? text : text.padEnd(widths[i]!);
      return typeof cell === 'string' ? padded : cell.wrap(padded);
    });
    return `  ${cells.join('  ')}`;
  });
}

function textOf(cell: Cell): string {
  return typeof cell === 'string' ? cell : cell.text;
}

interface Style {
  bold(text: string): string;
  critical(text: string): Cell;
  warning(text: string): Cell;
  severity(severity: Severity, text: string): Cell;
}

const ansi = (code: string) => (text: string) => `\x1b[${code}m${text}\x1b[0m`;
const red = ansi('1;31');
const yellow = ansi('33');
const magenta = ansi('35');

const COLOUR: Style = {
  bold: ansi('1'),
  critical: (text) => ({ text, wrap: red }),
  warning: (text) => ({ text, wrap: yellow }),
  severity: (severity, text) => ({
    text,
    wrap: severity === 'critical' ? red : severity === 'high' ? magenta : yellow,
  }),
};

const PLAIN: Style = {
  bold: (text) => text,
  critical: (text) => text,
  warning: (text) => text,
  severity: (_severity, text) => text,
};

function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** `: 12 cross_store_duplicate, 2 scope_violation` in order of first appearance; '' for none. */
function breakdown(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  if (counts.size === 0) return '';
  return `: ${[...counts].map(([value, n]) => `${count(n)} ${value}`).join(', ')}`;
}

/** `2025-06-02 09:00:08 UTC`: to the second; the JSON output has the milliseconds. */
function formatTime(unixMillis: number): string {
  return `${new Date(unixMillis).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** `2025-06-02 09:00:08–09:00:16 UTC`, with the second date only when the day changes. */
function formatWindow(startUnixMillis: number, endUnixMillis: number): string {
  const start = new Date(startUnixMillis).toISOString();
  const end = new Date(endUnixMillis).toISOString();
  const sameDay = start.slice(0, 10) === end.slice(0, 10);
  return `${start.slice(0, 19).replace('T', ' ')}–${sameDay ? end.slice(11, 19) : end.slice(0, 19).replace('T', ' ')} UTC`;
}
