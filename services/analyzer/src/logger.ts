/**
 * The service's log: one line per call. `info` goes to stdout (the listening lines that scripts
 * wait for), `error` to stderr. Tests pass their own to capture lines or keep output quiet.
 */
export interface Logger {
  info(line: string): void;
  error(line: string): void;
}

export const consoleLogger: Logger = Object.freeze({
  info: (line: string) => {
    process.stdout.write(`${line}\n`);
  },
  error: (line: string) => {
    process.stderr.write(`${line}\n`);
  },
});

export const silentLogger: Logger = Object.freeze({ info: () => {}, error: () => {} });

/** How often one line is written at most: once per window, the repeats counted. */
export const REPEAT_WINDOW_MILLIS = 60_000;
/** Distinct lines remembered; past that the oldest is forgotten (its count written first). */
const MAX_REMEMBERED_LINES = 1_000;

/** A logger that writes a repeated line once per window; see `rateLimitedLogger`. */
export interface RateLimitedLogger extends Logger {
  /** Writes the count of each line whose window has ended with repeats; a timer calls it. */
  flush(): void;
  /** Writes every count still held, window ended or not; for stopping. */
  close(): void;
}

interface Repeats {
  readonly level: keyof Logger;
  readonly line: string;
  /** When the line was last written. */
  writtenUnixMillis: number;
  /** Times it came again since, not written. */
  repeats: number;
}

/**
 * Lets a line through to `inner` at most once per `windowMillis` (same level, same text): a disk
 * that stays full fails every request the same way, and one line per request buries the rest of
 * the log. A repeat within the window is only counted. The count is written with the line the
 * next time it comes after the window, or by `flush` once the window has ended:
 * `pipeline: store transaction failed: … (repeated 444 times in the last 55 s)`, N being how many
 * times the line came since it was last written.
 */
export function rateLimitedLogger(
  inner: Logger,
  options: { windowMillis?: number; now?: () => number } = {},
): RateLimitedLogger {
  const windowMillis = options.windowMillis ?? REPEAT_WINDOW_MILLIS;
  const now = options.now ?? Date.now;
  const lines = new Map<string, Repeats>();

  const counted = (entry: Repeats, times: number, at: number) =>
    `${entry.line} (repeated ${times} ${times === 1 ? 'time' : 'times'} in the last ${Math.round((at - entry.writtenUnixMillis) / 1000)} s)`;
  const writeCount = (entry: Repeats, at: number) => {
    if (entry.repeats > 0) inner[entry.level](counted(entry, entry.repeats, at));
  };

  const log = (level: keyof Logger, line: string) => {
    const at = now();
    const id = `${level}\u0000${line}`;
    const entry = lines.get(id);
    if (entry !== undefined && at - entry.writtenUnixMillis < windowMillis) {
      entry.repeats++;
      return;
    }
    inner[level](entry === undefined || entry.repeats === 0 ? line : counted(entry, entry.repeats + 1, at));
    // Re-inserted, so that the map's order is the order lines were last written in.
    lines.delete(id);
    lines.set(id, { level, line, writtenUnixMillis: at, repeats: 0 });
    if (lines.size > MAX_REMEMBERED_LINES) {
      const [oldestId, oldest] = lines.entries().next().value as [string, Repeats];
      writeCount(oldest, at);
      lines.delete(oldestId);
    }
  };

  return {
    info: (line) => log('info', line),
    error: (line) => log('error', line),
    flush() {
      const at = now();
      // In the order lines were last written: past the first window still open, all are open.
      for (const [id, entry] of lines) {
        if (at - entry.writtenUnixMillis < windowMillis) break;
        writeCount(entry, at);
        lines.delete(id);
      }
    },
    close() {
      const at = now();
      for (const entry of lines.values()) writeCount(entry, at);
      lines.clear();
    },
  };
}
