import { displayWidth, padToWidth, terminalSafe, truncateToWidth } from './display-width.ts';

/**
 * Aligned columns in a terminal's width, for the table report: each column as wide as its widest
 * cell, and when the row does not fit, the columns that may give up width do so in their order
 * (`shrinkOrder`), down to their `minWidth`, their cells cut with an ellipsis. Every line returned
 * fits in `widthColumns` — if even the narrowest columns do not, the line itself is cut.
 */

/** A cell's text and, for colour, how to wrap it once padded (escape codes take no columns). */
export type Cell = string | { readonly text: string; readonly wrap: (padded: string) => string };

export interface Column {
  readonly header: string;
  /** Lower gives up width first; absent: never cut (short values: counts, times, closed lists). */
  readonly shrinkOrder?: number;
  /** Narrowest it is cut to (the header is cut too, if longer). */
  readonly minWidth?: number;
}

const GAP = '  ';

export function textOf(cell: Cell): string {
  return terminalSafe(typeof cell === 'string' ? cell : cell.text);
}

/**
 * Widths for `columns` holding `rows` in `available` columns (the line's width less its indent);
 * `Infinity` for no limit.
 */
export function columnWidths(
  columns: readonly Column[],
  rows: readonly (readonly Cell[])[],
  available: number,
  withHeader = true,
): number[] {
  const widths = columns.map((column) => (withHeader ? displayWidth(column.header) : 0));
  for (const row of rows) {
    for (let i = 0; i < columns.length; i++)
      widths[i] = Math.max(widths[i]!, displayWidth(textOf(row[i] ?? '')));
  }
  let excess = widths.reduce((sum, w) => sum + w, 0) + GAP.length * (columns.length - 1) - available;
  const order = columns
    .map((column, i) => ({ i, rank: column.shrinkOrder }))
    .filter((entry): entry is { i: number; rank: number } => entry.rank !== undefined)
    .sort((a, b) => a.rank - b.rank);
  for (const { i } of order) {
    if (excess <= 0) break;
    const give = Math.max(0, Math.min(excess, widths[i]! - (columns[i]!.minWidth ?? 1)));
    widths[i]! -= give;
    excess -= give;
  }
  return widths;
}

/**
 * One line of cells at `widths`, indented, the last cell unpadded (no trailing spaces). A line still
 * wider than `widthColumns` (0: no limit) is cut, without its colour.
 */
export function renderRow(
  cells: readonly Cell[],
  widths: readonly number[],
  indent: string,
  widthColumns: number,
): string {
  let plain = indent;
  let styled = indent;
  // Empty cells at the end are left out, so that no line ends in spaces.
  let last = cells.length - 1;
  while (last > 0 && textOf(cells[last]!) === '') last--;
  for (let i = 0; i <= last; i++) {
    const cell = cells[i]!;
    const text = truncateToWidth(textOf(cell), widths[i]!);
    const padded = i === last ? text : padToWidth(text, widths[i]!);
    const gap = i === last ? '' : GAP;
    plain += padded + gap;
    styled += (typeof cell === 'string' ? padded : cell.wrap(padded)) + gap;
  }
  if (widthColumns > 0 && displayWidth(plain) > widthColumns) return truncateToWidth(plain, widthColumns);
  return styled;
}

/** A table: its header line (when `withHeader`) and one line per row. */
export function tableLines(
  columns: readonly Column[],
  rows: readonly (readonly Cell[])[],
  indent: string,
  widthColumns: number,
  options: { withHeader?: boolean; bold?: (text: string) => string } = {},
): string[] {
  const withHeader = options.withHeader ?? true;
  const widths = columnWidths(columns, rows, available(widthColumns, indent), withHeader);
  const lines: string[] = [];
  if (withHeader) {
    const header = renderRow(
      columns.map((column) => column.header),
      widths,
      indent,
      widthColumns,
    );
    lines.push(options.bold === undefined ? header : options.bold(header));
  }
  for (const row of rows) lines.push(renderRow(row, widths, indent, widthColumns));
  return lines;
}

/** Columns left after `indent` in a line of `widthColumns` (0: no limit). */
export function available(widthColumns: number, indent: string): number {
  return widthColumns > 0 ? Math.max(1, widthColumns - displayWidth(indent)) : Number.POSITIVE_INFINITY;
}

/** `text` (terminal-safe) cut to fit after `indent`. */
export function fitLine(indent: string, text: string, widthColumns: number): string {
  return indent + truncateToWidth(terminalSafe(text), available(widthColumns, indent));
}

/**
 * `text` wrapped at spaces into lines that fit after `indent` (`firstIndent` on the first), at most
 * `maxLines` of them, the last cut with an ellipsis when text is left over.
 */
export function wrapLines(
  text: string,
  widthColumns: number,
  indent: string,
  maxLines: number,
  firstIndent = indent,
): string[] {
  const safe = terminalSafe(text);
  if (widthColumns <= 0) return [firstIndent + safe];
  const lines: string[] = [];
  let rest = safe.trim();
  while (rest !== '' && lines.length < maxLines) {
    const prefix = lines.length === 0 ? firstIndent : indent;
    const room = available(widthColumns, prefix);
    const last = lines.length === maxLines - 1;
    if (displayWidth(rest) <= room) {
      lines.push(prefix + rest);
      rest = '';
      break;
    }
    if (last) {
      lines.push(prefix + truncateToWidth(rest, room));
      rest = '';
      break;
    }
    const cut = breakAt(rest, room);
    lines.push(prefix + rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  return lines;
}

/** Where to end a line of at most `room` columns: after the last space that fits, else mid-word. */
function breakAt(text: string, room: number): number {
  let width = 0;
  let lastSpace = -1;
  let index = 0;
  for (const char of text) {
    const w = displayWidth(char);
    if (width + w > room) break;
    width += w;
    index += char.length;
    if (char === ' ') lastSpace = index;
  }
  return lastSpace > 0 ? lastSpace : Math.max(1, index);
}
