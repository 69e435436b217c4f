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
