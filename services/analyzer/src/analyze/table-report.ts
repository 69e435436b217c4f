import {
  type Finding,
  type Incident,
  RAN_TWICE,
  type ScopeReportRow,
  type Severity,
  tierLabel,
} from '@keyscope/detector';
import type { AnalysisResult } from './analysis.ts';
import { formatBytes } from './progress-meter.ts';
import { type Cell, type Column, fitLine, tableLines, wrapLines } from './table-layout.ts';

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
  /** The terminal's width: every line fits in it, cells cut with an ellipsis; 0 for no limit. */
  readonly widthColumns: number;
  /** Incidents shown, and findings shown among them; 0 for all. */
  readonly limit: number;
}

/** `--limit`'s default: a screenful of incidents and findings. */
export const DEFAULT_TABLE_LIMIT = 20;
/** The width when stdout is not a terminal and `--width` is not given. */
export const DEFAULT_WIDTH_COLUMNS = 80;

const SEVERITY_RANK: Readonly<Record<Severity, number>> = { critical: 0, high: 1, warning: 2 };
/**
 * Lines of an incident's title before it is cut: the whole text is in --format json. The advice
 * is never cut: it is what on-call acts on, worded as the incident page words it.
 */
const TITLE_LINES = 2;
const ADVICE_LINES = Number.POSITIVE_INFINITY;

/**
 * `--format table`: the report for a person — a summary; the incidents, most severe first, each
 * with its title, routing event and advice and then its findings; and the scope report. Every line
 * fits the terminal (cells cut with an ellipsis: the full values are in `--format json` and `csv`),
 * and at most `limit` incidents and findings are shown, spread over the incidents shown, with a
 * line counting the rest.
 */
export function renderTable(result: AnalysisResult, read: ReadSummary, options: TableOptions): string {
  const style = options.colour ? COLOUR : PLAIN;
  const width = options.widthColumns;
  const out: string[] = [];
  const ranTwice = new Set(result.findings.filter((f) => RAN_TWICE[f.class].effect).map((f) => f.key));

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
  out.push(...tableLines(SUMMARY_COLUMNS, summary, '  ', width, { withHeader: false }));

  out.push(
    '',
    style.bold(
      `Incidents (${count(result.incidents.length)}) and their findings (${count(result.findings.length)})`,
    ),
  );
  if (result.findings.length === 0 && result.incidents.length === 0) {
    out.push('  none: no key executed twice and no retry crossed its key scope');
  } else {
    out.push(...incidentsSection(result, options, style));
  }

  out.push('', style.bold(`Scope report (${result.scopes.length})`));
  if (result.scopes.length === 0) out.push('  none: no span carried an idempotency key');
  else {
    out.push(
      ...tableLines(
        SCOPE_COLUMNS,
        result.scopes.map((row) => scopeRow(row, style)),
        '  ',
        width,
      ),
      ...wrapLines(
        'COVERING: the smallest scope that would have held every observed retry of every key. ' +
          'CROSSED N/C/R: keys whose retries crossed nodes within one cluster / clusters within one region / regions, each key counted once, at the widest it crossed.',
        width,
        '  ',
        4,
      ),
    );
  }
  return `${out.join('\n')}\n`;
}

const SUMMARY_COLUMNS: readonly Column[] = [{ header: '' }, { header: '', shrinkOrder: 1, minWidth: 8 }];

// In 80 columns whole; the id, which the API and the web page look incidents up by, is cut last.
const INCIDENT_COLUMNS: readonly Column[] = [
  { header: 'ID', shrinkOrder: 2, minWidth: 12 },
  { header: 'SEVERITY' },
  { header: 'STATUS' },
  { header: 'KEYS' },
  { header: 'CLASS', shrinkOrder: 1, minWidth: 10 },
];

const SCOPE_COLUMNS: readonly Column[] = [
  { header: 'SERVICE/OPERATION', shrinkOrder: 1, minWidth: 12 },
  { header: 'DECLARED' },
  { header: 'COVERING' },
  { header: 'KEYS' },
  { header: 'CROSSED N/C/R' },
  { header: 'AT RISK' },
  { header: 'STATUS' },
];

/** A group of the report: an incident (null for findings whose incident is not in the result). */
interface Group {
  readonly incident: Incident | null;
  readonly findings: Finding[];
  shown: number;
}

function incidentsSection(result: AnalysisResult, options: TableOptions, style: Style): string[] {
  const width = options.widthColumns;
  const groups = groupByIncident(result);
  const limit = options.limit > 0 ? options.limit : Number.POSITIVE_INFINITY;
  const shownGroups = groups.slice(0, limit);
  allot(shownGroups, limit);

  const withCause = shownGroups.some((g) => g.findings.slice(0, g.shown).some((f) => f.cause !== null));
  // A UUID key stays whole in 80 columns; the stores give up width first.
  const findingColumns: Column[] = [
    { header: 'KEY', shrinkOrder: 3, minWidth: 12 },
    { header: 'STORES', shrinkOrder: 1, minWidth: 8 },
    { header: 'RUNS' },
    { header: 'RETRIED BY' },
    { header: 'FIRST SEEN' },
    ...(withCause ? [{ header: 'CAUSE', shrinkOrder: 2, minWidth: 6 }] : []),
  ];
  const shownFindings = shownGroups.flatMap((group) => group.findings.slice(0, group.shown));
  // The window lines carry the date; the times alone when every finding shown is of one day.
  const oneDay = new Set(shownFindings.map((f) => formatTime(f.firstSeenUnixMillis).slice(0, 10))).size <= 1;
  // One set of widths for every incident's headline and one for every finding, so they align.
  const headlines = shownGroups.map((group) => headline(group, style));
  const headlineLines = tableLines(INCIDENT_COLUMNS, headlines, '  ', width, { bold: style.bold });
  const findingRows = shownFindings.map((finding) => findingRow(finding, withCause, oneDay));
  const findingLines = tableLines(findingColumns, findingRows, '    ', width);
  const findingHeader = style.bold(findingLines[0]!);
  let nextFinding = 1;

  const out: string[] = [headlineLines[0]!];
  shownGroups.forEach((group, i) => {
    out.push('', headlineLines[i + 1]!);
    const incident = group.incident;
    if (incident !== null) {
      out.push(...wrapLines(incident.title, width, '    ', TITLE_LINES));
      out.push(fitLine('    ', windowLine(incident), width));
      out.push(...wrapLines(incident.advice, width, '            ', ADVICE_LINES, '    advice  '));
    } else {
      out.push(fitLine('    ', 'findings whose incident was retracted', width));
    }
    if (group.shown > 0) {
      out.push(findingHeader, ...findingLines.slice(nextFinding, nextFinding + group.shown));
      nextFinding += group.shown;
    }
    const more = group.findings.length - group.shown;
    if (more > 0)
      out.push(
        fitLine('    ', `… and ${count(more)} more ${plural(more, 'finding')} in this incident`, width),
      );
  });

  const hiddenIncidents = groups.length - shownGroups.length;
  const hiddenFindings = groups.reduce((sum, g) => sum + g.findings.length - g.shown, 0);
  if (hiddenIncidents > 0 || hiddenFindings > 0) {
    const parts: string[] = [];
    if (hiddenIncidents > 0)
      parts.push(`${count(hiddenIncidents)} more ${plural(hiddenIncidents, 'incident')}`);
    if (hiddenFindings > 0) parts.push(`${count(hiddenFindings)} more ${plural(hiddenFindings, 'finding')}`);
    out.push(
      '',
      ...wrapLines(
        `… ${parts.join(' and ')} not shown: --limit 0 shows all, --format json or csv lists every one in full`,
        width,
        '  ',
        2,
      ),
    );
  }
  return out;
}

/**
 * The incidents most severe first (then in order of opening), each with its findings in order of
 * first execution; findings of an incident not in the result last.
 */
function groupByIncident(result: AnalysisResult): Group[] {
  const byId = new Map<string, Group>();
  const incidents = [...result.incidents].sort(
    (a, b) =>
      SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] || a.openedUnixMillis - b.openedUnixMillis,
  );
  for (const incident of incidents) byId.set(incident.id, { incident, findings: [], shown: 0 });
  const orphans: Group = { incident: null, findings: [], shown: 0 };
  for (const finding of result.findings) (byId.get(finding.incidentId) ?? orphans).findings.push(finding);
  const groups = [...byId.values()];
  if (orphans.findings.length > 0) groups.push(orphans);
  return groups;
}

/** Spreads `limit` findings over the groups a round at a time, so every incident shows its first ones. */
function allot(groups: Group[], limit: number): void {
  let budget = limit;
  let open = groups.filter((g) => g.findings.length > 0);
  while (budget > 0 && open.length > 0) {
    if (budget === Number.POSITIVE_INFINITY) {
      for (const group of open) group.shown = group.findings.length;
      return;
    }
    for (const group of open) {
      if (budget === 0) break;
      group.shown++;
      budget--;
    }
    open = open.filter((g) => g.shown < g.findings.length);
  }
}

function headline(group: Group, style: Style): Cell[] {
  const incident = group.incident;
  if (incident === null) return ['(none)', '', '', count(group.findings.length), ''];
  return [
    incident.id,
    style.severity(incident.severity, incident.severity),
    incident.status,
    count(incident.keys),
    incident.class,
  ];
}

/** When: the routing event's window and what it was, or the incident's own window without one. */
function windowLine(incident: Incident): string {
  const event = incident.routingEvent;
  if (event === null) {
    return `window  ${formatWindow(incident.openedUnixMillis, incident.lastFindingUnixMillis)}, no routing event found`;
  }
  return `window  ${formatWindow(event.startUnixMillis, event.endUnixMillis)}, ${event.type} ${event.node || event.cluster || event.region}`;
}

function findingRow(finding: Finding, withCause: boolean, timeOnly: boolean): Cell[] {
  const firstSeen = formatTime(finding.firstSeenUnixMillis);
  return [
    finding.key,
    finding.stores.join(', '),
    String(finding.executions),
    finding.retriedBy,
    timeOnly ? firstSeen.slice(11) : firstSeen,
    ...(withCause ? [finding.cause ?? ''] : []),
  ];
}

function scopeRow(row: ScopeReportRow, style: Style): Cell[] {
  const spanning = row.keysSpanning;
  return [
    tierLabel(row.service, row.operation),
    row.declaredScope,
    row.smallestCoveringScope,
    count(row.keys),
    `${count(spanning.nodes)}/${count(spanning.clusters)}/${count(spanning.regions)}`,
    row.keysAtRisk > 0 ? style.warning(count(row.keysAtRisk)) : '0',
    row.status === 'narrower' ? style.critical(row.status) : row.status,
  ];
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

function plural(n: number, noun: string): string {
  return n === 1 ? noun : `${noun}s`;
}

/** `: 12 cross_store_duplicate, 2 scope_violation` in order of first appearance; '' for none. */
function breakdown(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  if (counts.size === 0) return '';
  return `: ${[...counts].map(([value, n]) => `${count(n)} ${value}`).join(', ')}`;
}

/** `2025-06-02 09:00:08`, UTC, to the second; the JSON output has the milliseconds. */
function formatTime(unixMillis: number): string {
  return new Date(unixMillis).toISOString().slice(0, 19).replace('T', ' ');
}

/** `2025-06-02 09:00:08–09:00:16 UTC`, with the second date only when the day changes. */
function formatWindow(startUnixMillis: number, endUnixMillis: number): string {
  const start = new Date(startUnixMillis).toISOString();
  const end = new Date(endUnixMillis).toISOString();
  const sameDay = start.slice(0, 10) === end.slice(0, 10);
  return `${start.slice(0, 19).replace('T', ' ')}–${sameDay ? end.slice(11, 19) : end.slice(0, 19).replace('T', ' ')} UTC`;
}
