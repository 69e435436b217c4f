/**
 * The progress line `keyscope analyze` redraws on stderr while it reads: bytes read of the total
 * and spans per second. Only on a terminal: a pipe or a log file gets nothing, since a stream of
 * carriage returns is noise to anything but a terminal.
 */
export interface ProgressMeter {
  /** Redraws when the last drawing is at least REDRAW_MILLIS old (the first update always draws). */
  update(bytesRead: number, spans: number): void;
  /** Erases the line, so other stderr output starts at column 0; the next update redraws. */
  clear(): void;
  /** Erases the line for good. */
  finish(): void;
}

/** What the meter needs of stderr. */
export interface ProgressStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(text: string): unknown;
}

/** At most ten redraws a second: smooth enough to watch, cheap enough to ignore. */
export const REDRAW_MILLIS = 100;
const BAR_CELLS = 12;
const ERASE_LINE = '\r\x1b[K';

export function createProgressMeter(
  stream: ProgressStream,
  totalBytes: number | null,
  now: () => number = () => performance.now(),
): ProgressMeter {
  if (stream.isTTY !== true) return { update() {}, clear() {}, finish() {} };
  const started = now();
  let lastDrawn = Number.NEGATIVE_INFINITY;
  let drawn = false;
  let finished = false;
  return {
    update(bytesRead, spans) {
      const at = now();
      if (finished || at - lastDrawn < REDRAW_MILLIS) return;
      lastDrawn = at;
      const line = progressLine(bytesRead, totalBytes, spans, (at - started) / 1000);
      // One column short of the width: writing the last column wraps on some terminals. A
      // terminal that reports no size (0, as under `script` without one) gets the classic 80.
      const width = (stream.columns || 80) - 1;
      stream.write(`${ERASE_LINE}${line.length > width ? line.slice(0, width) : line}`);
      drawn = true;
    },
    clear() {
      if (drawn) stream.write(ERASE_LINE);
      drawn = false;
      lastDrawn = Number.NEGATIVE_INFINITY;
    },
    finish() {
      if (drawn) stream.write(ERASE_LINE);
      drawn = false;
      finished = true;
    },
  };
}

/** `[===>        ] 12.3 MiB / 45.6 MiB  27%  123,456 spans  45,678 spans/s`: fits 80 columns. */
export function progressLine(
  bytesRead: number,
  totalBytes: number | null,
  spans: number,
  elapsedSeconds: number,
): string {
  const rate = elapsedSeconds > 0 ? Math.round(spans / elapsedSeconds) : 0;
  const tail = `${spans.toLocaleString('en-US')} spans  ${rate.toLocaleString('en-US')} spans/s`;
  if (totalBytes === null || totalBytes <= 0) return `${formatBytes(bytesRead)} read  ${tail}`;
  const fraction = Math.min(1, bytesRead / totalBytes);
  const full = Math.round(fraction * BAR_CELLS);
  const bar =
    full >= BAR_CELLS ? '='.repeat(BAR_CELLS) : `${'='.repeat(full)}>${' '.repeat(BAR_CELLS - full - 1)}`;
  const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
  return `[${bar}] ${formatBytes(bytesRead)} / ${formatBytes(totalBytes)} ${percent}  ${tail}`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
