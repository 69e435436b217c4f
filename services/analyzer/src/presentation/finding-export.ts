import type { ServerAttempt } from '@keyscope/attempts';
import { endpointOf, executionOutcomes, type Finding, type FindingClass } from '@keyscope/detector';
import { isoTime } from './present.ts';

/*
 * The reconciliation export: findings as one row per execution, for the people who refund a double
 * charge — finance, support — rather than for on-call. `GET /api/v1/findings` and
 * `GET /api/v1/incidents/:id` answer it as CSV or NDJSON, and so does `keyscope analyze --format`.
 */

export type ExportFormat = 'csv' | 'ndjson';
/** The `format` query parameter's values; `json` is the API's usual answer. */
export const RESPONSE_FORMATS = ['json', 'csv', 'ndjson'] as const;
export type ResponseFormat = (typeof RESPONSE_FORMATS)[number];

/**
 * One execution of a finding's key: the admitted attempt (`miss`) at the finding's tier, less those
 * whose request failed before its effect took place. A finding with no such attempt (evidence
 * trimmed by `maxAttemptsPerKey`) is one row with the execution's columns empty, so that no finding
 * is left out of the file.
 */
export interface ExecutionRow {
  key: string;
  /** The execution's tenant: the two rows of a key collision name the two tenants. */
  tenant: string;
  /** `suspected_duplicate` for an unconfirmed one; the other duplicate classes are confirmed. */
  class: FindingClass;
  findingId: string;
  incidentId: string;
  store: string;
  node: string;
  /** ISO 8601, UTC, to the millisecond. */
  start: string;
  traceId: string;
  spanId: string;
  /**
   * The mapping's `businessId` (`payment.id`) on the decision span, else on its request's SERVER
   * span; '' when neither carries one.
   */
  businessId: string;
  /** `unknown`: the request failed after admission and nobody can tell if its effect committed. */
  execution: 'executed' | 'unknown' | '';
}

/** The columns, in the order of the CSV header and of each NDJSON object's properties. */
export const EXECUTION_COLUMNS: readonly (keyof ExecutionRow)[] = [
  'key',
  'tenant',
  'class',
  'findingId',
  'incidentId',
  'store',
  'node',
  'start',
  'traceId',
  'spanId',
  'businessId',
  'execution',
];

export const EXPORT_CONTENT_TYPES: Readonly<Record<ExportFormat, string>> = {
  csv: 'text/csv; charset=utf-8; header=present',
  ndjson: 'application/x-ndjson; charset=utf-8',
};

export function executionRows(finding: Finding): ExecutionRow[] {
  const outcomeOf = executionOutcomes(finding.attempts);
  const requestBusinessIds = new Map<string, string>();
  for (const attempt of finding.attempts) {
    // Findings stored before attempts carried a business id have none.
    if (attempt.kind === 'arrival' && attempt.businessId) {
      requestBusinessIds.set(`${attempt.traceId}/${attempt.spanId}`, attempt.businessId);
    }
  }
  const rows: ExecutionRow[] = [];
  for (const attempt of finding.attempts) {
    if (attempt.kind !== 'server' || attempt.outcome !== 'miss') continue;
    if (
      attempt.placement.service !== finding.service ||
      endpointOf(attempt, finding.attempts) !== finding.operation
    )
      continue;
    const outcome = outcomeOf(attempt);
    if (outcome === 'not_executed') continue;
    rows.push({
      ...findingColumns(finding),
      tenant: attempt.tenant,
      store: attempt.store,
      node: attempt.placement.node,
      start: isoTime(attempt.startUnixMillis),
      traceId: attempt.traceId,
      spanId: attempt.spanId,
      businessId: businessIdOf(attempt, requestBusinessIds),
      execution: outcome,
    });
  }
  if (rows.length === 0) {
    rows.push({
      ...findingColumns(finding),
      tenant: finding.tenant,
      store: '',
      node: '',
      start: '',
      traceId: '',
      spanId: '',
      businessId: '',
      execution: '',
    });
  }
  return rows;
}

function findingColumns(finding: Finding) {
  return {
    key: finding.key,
    class: finding.class,
    findingId: finding.id,
    incidentId: finding.incidentId,
  };
}

function businessIdOf(execution: ServerAttempt, requestBusinessIds: Map<string, string>): string {
  return (
    execution.businessId || requestBusinessIds.get(`${execution.traceId}/${execution.parentSpanId}`) || ''
  );
}

/** The CSV header line, CRLF-terminated as RFC 4180 has it. */
export function csvHeader(): string {
  return `${EXECUTION_COLUMNS.join(',')}\r\n`;
}

export function csvLine(row: ExecutionRow): string {
  let line = '';
  for (let i = 0; i < EXECUTION_COLUMNS.length; i++) {
    if (i > 0) line += ',';
    line += csvCell(row[EXECUTION_COLUMNS[i]!]);
  }
  return `${line}\r\n`;
}

/** A cell a spreadsheet would run as a formula (`=HYPERLINK(…)`, `+1+cmd|…`), OWASP's list. */
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * RFC 4180: a field holding a comma, a double quote or a line break is quoted, its quotes doubled.
 * Keys, tenants and business ids come from spans, so from whoever sends requests: a cell that
 * starts like a formula gets a leading apostrophe, which spreadsheets show as text.
 */
export function csvCell(value: string): string {
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function ndjsonLine(row: ExecutionRow): string {
  const ordered: Record<string, string> = {};
  for (const column of EXECUTION_COLUMNS) ordered[column] = row[column];
  return `${JSON.stringify(ordered)}\n`;
}

/**
 * The export's text, one chunk per batch of findings (a store page): the header first for CSV,
 * then every batch's rows. Lazy, so a caller that writes each chunk before asking for the next
 * holds one batch at a time.
 */
export function* exportChunks(
  format: ExportFormat,
  batches: Iterable<readonly Finding[]>,
): Generator<string, void, undefined> {
  if (format === 'csv') yield csvHeader();
  const line = format === 'csv' ? csvLine : ndjsonLine;
  for (const findings of batches) {
    let chunk = '';
    for (const finding of findings) for (const row of executionRows(finding)) chunk += line(row);
    if (chunk !== '') yield chunk;
  }
}

/**
 * What a request asks for: the `format` query parameter when given, else the `Accept` header's
 * preferred type among JSON, CSV (`text/csv`) and NDJSON (`application/x-ndjson`, or
 * `application/ndjson`); JSON when it prefers none of them (a browser's `text/html,…,*\/*`).
 */
export function requestedFormat(query: string | undefined, accept: string | undefined): ResponseFormat {
  if (query !== undefined) return query as ResponseFormat;
  if (accept === undefined) return 'json';
  let best: ResponseFormat = 'json';
  let bestQuality = 0;
  for (const range of accept.split(',')) {
    const [type, ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const format = ACCEPTED_TYPES.get(type ?? '');
    if (format === undefined) continue;
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    // Ties go to the earlier range, as listed.
    if (quality > bestQuality) {
      best = format;
      bestQuality = quality;
    }
  }
  return best;
}

const ACCEPTED_TYPES: ReadonlyMap<string, ResponseFormat> = new Map([
  ['application/json', 'json'],
  ['text/csv', 'csv'],
  ['application/x-ndjson', 'ndjson'],
  ['application/ndjson', 'ndjson'],
]);
