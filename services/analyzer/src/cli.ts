import { existsSync, realpathSync, rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { isKeyscopeError } from '@keyscope/errors';
import {
  ANALYZE_FORMATS,
  type AnalyzeFormat,
  type AnalyzeOptions,
  DEFAULT_MAX_RECORD_MIB,
  defaultAnalyzeThreads,
  MAX_ANALYZE_THREADS,
  runAnalyze,
} from './analyze/run-analyze.ts';
import { DEFAULT_TABLE_LIMIT } from './analyze/table-report.ts';
import {
  defaultServeConfig,
  readConfigFile,
  resolveEnvConfig,
  resolveServeConfig,
  type ServeConfig,
} from './config.ts';
import { DEMO_DB_PATH, runDemo } from './demo.ts';
import { type RunningRoles, startRoles } from './kafka/start-roles.ts';
import { consoleLogger } from './logger.ts';
import type { RunningService } from './serve.ts';
import { checkDatabaseFolder } from './startup-errors.ts';

/** The `keyscope` command line: parses arguments, then hands over to serve.ts. */

const USAGE = `usage: keyscope <command> [options]

commands:
  serve   the embedded service: OTLP receivers, detection, SQLite, HTTP API, alerts
  demo    serve, plus simulated traffic with node failures, so you see incidents at once
  analyze offline analysis of OTLP trace files (protobuf, JSON, the Collector's JSON lines)

'keyscope <command> --help' shows a command's options.`;

const DEFAULTS = defaultServeConfig();

const SERVE_USAGE = `usage: keyscope serve [--config FILE] [--role all|ingest|detect|serve] [--api-port N] [--otlp-http-port N] [--otlp-grpc-port N] [--db PATH]

  --config FILE         YAML or JSON configuration (or KEYSCOPE_CONFIG); KEYSCOPE_* variables
                        override it, flags override both (docs/configuration.md)
  --role ROLE           ${DEFAULTS.role} (default; without kafka.brokers the embedded service), or one part of
                        the scaled mode: ingest, detect or serve (docs/scaling.md)
  --api-port N          HTTP API, web page and API reference (/docs) on ${DEFAULTS.api.host},
                        default ${DEFAULTS.api.port} (0 picks a free port)
  --otlp-http-port N    OTLP/HTTP receiver on ${DEFAULTS.otlp.http.host}, default ${DEFAULTS.otlp.http.port} (0 picks a free port)
  --otlp-grpc-port N    OTLP/gRPC receiver on ${DEFAULTS.otlp.grpc.host}, default ${DEFAULTS.otlp.grpc.port} (0 picks a free port)
  --db PATH             SQLite database file, default ${DEFAULTS.db.path} (:memory: keeps nothing)
  -h, --help            show this help

Stops on SIGINT or SIGTERM after answering the requests in flight.`;

const DEMO_USAGE = `usage: keyscope demo [--keep] [--db PATH] [--api-port N] [--otlp-http-port N] [--otlp-grpc-port N] [--config FILE]

Starts the embedded service as 'keyscope serve' does, then sends it a few minutes of simulated
checkout → payments traffic over OTLP/HTTP: payments nodes with node-local dedup stores fail,
clients retry with the same idempotency key on another node, and some keys execute twice. It
prints the incidents keyscope opened and where to look at them (web page, API), then keeps
serving until Ctrl-C.

  --db PATH             SQLite database file, default ${DEMO_DB_PATH}, emptied at start unless --keep;
                        any other file is used as it is (:memory: keeps nothing)
  --keep                keep what earlier demos left in ${DEMO_DB_PATH}
  --api-port N          web page, HTTP API and API reference (/docs) on ${DEFAULTS.api.host},
                        default ${DEFAULTS.api.port} (0 picks a free port)
  --otlp-http-port N    OTLP/HTTP receiver, default ${DEFAULTS.otlp.http.port} (0 picks a free port)
  --otlp-grpc-port N    OTLP/gRPC receiver, default ${DEFAULTS.otlp.grpc.port} (0 picks a free port)
  --config FILE         as for serve (docs/configuration.md)
  -h, --help            show this help`;

const ANALYZE_USAGE = `usage: keyscope analyze [--format table|json|csv|ndjson] [--config FILE] [--mapping FILE] [--keep-going] [--max-record-mib N] [--width N] [--limit N] [--threads N] PATH…

  PATH                  a file, a folder (read recursively, in sorted order) or - (JSON lines on stdin):
                          .pb     one protobuf ExportTraceServiceRequest
                          .json   one OTLP/JSON request (or JSON lines, when its first line is one)
                          .jsonl  one OTLP/JSON request per line, as the Collector's file exporter writes
                        any of them gzipped (.gz, or recognised by its first bytes); other files are
                        skipped and listed on stderr
  --format FORMAT       table (default): a report to read; json: one object { findings, incidents,
                        scopes } with the HTTP API's shapes, and nothing else on stdout;
                        csv, ndjson: one row per execution, as GET /api/v1/findings?format=csv
  --width N             the table's width in columns (default: the terminal's, else 80; 0: no limit)
  --limit N             incidents and findings the table shows (default ${DEFAULT_TABLE_LIMIT}; 0: all)
  --config FILE         serve's settings file (YAML or JSON): the archive is judged with its detector
                        settings and its mapping.file, as serve would judge it
  --mapping FILE        attribute mapping, YAML or JSON (as serve's mapping.file); wins over --config's
  --keep-going          report each bad record on stderr (file, byte offset, error code) and
                        analyse the rest
  --max-record-mib N    largest .pb or .json file, or JSON line, after decompression (default ${DEFAULT_MAX_RECORD_MIB})
  --threads N           threads in all (default ${defaultAnalyzeThreads()}): N − 1 decode and extract the records
                        while one reads them and runs the detector. The results are the same with
                        any number; on two cores more threads are slower (docs/performance.md)
  -h, --help            show this help

A progress line is drawn on stderr when it is a terminal. Spans go through the same engine as
serve, flushed at the last span's time, so archives are judged by their own clock.

exit status: 0 it ran (with findings or without), 1 unreadable input (a bad record without
--keep-going, or nothing analysable), 2 usage error, 141 the reader closed stdout early (| head),
as for a program killed by SIGPIPE.`;

/** Bad command-line input: exit 2 with a message naming the flag. */
class UsageError extends Error {
  override readonly name = 'UsageError';
}

interface ServeArgs {
  readonly help: boolean;
  /** demo only: `--keep`. */
  readonly keep: boolean;
  readonly configFile: string | undefined;
  /** A partial config for `resolveServeConfig`, from the flags given. */
  readonly overrides: Record<string, unknown>;
}

function parseServeArgs(args: string[], mode: 'serve' | 'demo'): ServeArgs {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        config: { type: 'string' },
        role: { type: 'string' },
        keep: { type: 'boolean' },
        'api-port': { type: 'string' },
        'otlp-http-port': { type: 'string' },
        'otlp-grpc-port': { type: 'string' },
        db: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    // parseArgs names the offending flag: "Unknown option '--prot'", "Option '--db <value>' argument missing".
    throw new UsageError((error as Error).message);
  }
  // The demo runs the embedded service, on a database of its own: no role, and --keep for that database.
  const foreign = mode === 'serve' ? 'keep' : 'role';
  if (values[foreign] !== undefined) throw new UsageError(`--${foreign} is not a ${mode} option`);
  const port = (flag: string) => {
    const value = values[flag] as string | undefined;
    if (value === undefined) return undefined;
    const parsed = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
    if (!(parsed <= 65_535)) {
      throw new UsageError(`--${flag} must be an integer from 0 to 65535, received ${JSON.stringify(value)}`);
    }
    return parsed;
  };
  const text = (flag: string) => {
    const value = values[flag] as string | undefined;
    if (value !== undefined && value.trim() === '') throw new UsageError(`--${flag} must not be empty`);
    return value;
  };
  const dbPath = text('db');
  return {
    help: values.help === true,
    keep: values.keep === true,
    configFile: text('config'),
    overrides: {
      // resolveServeConfig names the accepted roles when the value is not one.
      role: text('role'),
      api: { port: port('api-port') },
      db: { path: dbPath },
      otlp: { http: { port: port('otlp-http-port') }, grpc: { port: port('otlp-grpc-port') } },
    },
  };
}

const ANALYZE_OPTIONS = {
  format: { type: 'string' },
  config: { type: 'string' },
  mapping: { type: 'string' },
  'keep-going': { type: 'boolean' },
  'max-record-mib': { type: 'string' },
  threads: { type: 'string' },
  width: { type: 'string' },
  limit: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseAnalyzeArgs(args: string[]) {
  const { values, positionals } = (() => {
    try {
      return parseArgs({ args, strict: true, allowPositionals: true, options: ANALYZE_OPTIONS });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  })();
  const format = values.format ?? 'table';
  if (!ANALYZE_FORMATS.includes(format as AnalyzeFormat)) {
    throw new UsageError(
      `--format must be ${ANALYZE_FORMATS.join(', ')}, received ${JSON.stringify(format)}`,
    );
  }
  const count = (flag: 'width' | 'limit', min: number, max: number) => {
    const value = values[flag];
    if (value === undefined) return undefined;
    const n = /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN;
    if (!(n === 0 || (n >= min && n <= max))) {
      throw new UsageError(
        `--${flag} must be 0 or an integer from ${min} to ${max}, received ${JSON.stringify(value)}`,
      );
    }
    return n;
  };
  if (values.mapping !== undefined && values.mapping.trim() === '')
    throw new UsageError('--mapping must not be empty');
  if (values.config !== undefined && values.config.trim() === '')
    throw new UsageError('--config must not be empty');
  const mib = values['max-record-mib'] ?? String(DEFAULT_MAX_RECORD_MIB);
  const maxRecordMib = /^\d{1,5}$/.test(mib) ? Number(mib) : Number.NaN;
  if (!(maxRecordMib >= 1 && maxRecordMib <= 4096)) {
    throw new UsageError(
      `--max-record-mib must be an integer from 1 to 4096, received ${JSON.stringify(mib)}`,
    );
  }
  const threadsText = values.threads ?? String(defaultAnalyzeThreads());
  const threads = /^\d{1,3}$/.test(threadsText) ? Number(threadsText) : Number.NaN;
  if (!(threads >= 1 && threads <= MAX_ANALYZE_THREADS)) {
    throw new UsageError(
      `--threads must be an integer from 1 to ${MAX_ANALYZE_THREADS}, received ${JSON.stringify(threadsText)}`,
    );
  }
  if (values.help !== true && positionals.length === 0) {
    throw new UsageError('at least one PATH is required (a file, a folder, or - for stdin)');
  }
  return {
    help: values.help === true,
    configFile: values.config,
    options: {
      paths: positionals,
      format: format as AnalyzeFormat,
      mappingFile: values.mapping,
      keepGoing: values['keep-going'] === true,
      maxRecordBytes: maxRecordMib * 1024 * 1024,
      threads,
      widthColumns: count('width', 20, 100_000),
      limit: count('limit', 1, 1_000_000_000),
    },
  };
}

async function analyze(args: string[]): Promise<number> {
  // A failed write reaches runAnalyze through its callback (a closed pipe ends the run with 141);
  // the stream also emits it as 'error', which would be thrown with a stack trace if unheard.
  process.stdout.on('error', () => {});
  const parsed = parseAnalyzeArgs(args);
  if (parsed.help) {
    process.stdout.write(`${ANALYZE_USAGE}\n`);
    return 0;
  }
  return runAnalyze(await withSettingsFile(parsed.options, parsed.configFile), {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
  });
}

/**
 * `keyscope analyze --config FILE`: the archive judged with serve's settings file — its detector
 * section, and its mapping file unless --mapping names another. Throws KS_ANALYZER_CONFIG_INVALID
 * naming a bad field, as serve would.
 */
async function withSettingsFile(
  options: AnalyzeOptions,
  configFile: string | undefined,
): Promise<AnalyzeOptions> {
  if (configFile === undefined) return options;
  const settings = resolveServeConfig(await readConfigFile(configFile), DEFAULTS);
  return {
    ...options,
    detector: settings.detector,
    mappingFile: options.mappingFile ?? (settings.mapping.file === '' ? undefined : settings.mapping.file),
  };
}

/**
 * The configuration `keyscope serve` (or `demo`) runs with, given its arguments (after the
 * command) and environment: defaults < config file (`--config`, else KEYSCOPE_CONFIG) <
 * KEYSCOPE_* variables < flags. Throws KS_ANALYZER_CONFIG_INVALID naming a bad field, and a
 * usage error for a bad flag.
 */
export async function loadServeConfig(
  args: string[],
  env: NodeJS.ProcessEnv,
  mode: 'serve' | 'demo' = 'serve',
): Promise<ServeConfig> {
  return layeredConfig(parseServeArgs(args, mode), env, mode);
}

/** Defaults < config file < KEYSCOPE_* environment < flags. */
async function layeredConfig(
  parsed: ServeArgs,
  env: NodeJS.ProcessEnv,
  mode: 'serve' | 'demo',
): Promise<ServeConfig> {
  const defaults = mode === 'serve' ? DEFAULTS : resolveServeConfig({ db: { path: DEMO_DB_PATH } });
  const configFile = parsed.configFile ?? env.KEYSCOPE_CONFIG;
  const fromFile = configFile ? resolveServeConfig(await readConfigFile(configFile), defaults) : defaults;
  const fromEnv = resolveEnvConfig(env, fromFile);
  return resolveServeConfig(parsed.overrides, fromEnv);
}

async function serve(args: string[], mode: 'serve' | 'demo'): Promise<number> {
  const parsed = parseServeArgs(args, mode);
  if (parsed.help) {
    process.stdout.write(`${mode === 'serve' ? SERVE_USAGE : DEMO_USAGE}\n`);
    return 0;
  }
  const config = await layeredConfig(parsed, process.env, mode);
  checkDatabaseFolder(config.db.path);
  // Listening for signals before the listeners start: a SIGTERM during startup still stops cleanly.
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  const running = await withoutNewDatabaseOnFailure<RunningService | RunningRoles>(config.db.path, () =>
    mode === 'serve'
      ? startRoles(config)
      : runDemo(config, consoleLogger, { fresh: config.db.path === DEMO_DB_PATH && !parsed.keep }),
  );
  // A role whose Kafka consumer stopped for good exits 1, for its supervisor to restart it.
  const stopped = 'failed' in running ? running.failed : new Promise<never>(() => {});
  const signal = await Promise.race([signalled, stopped]);
  // A second signal while draining means "now".
  const forceExit = () => process.exit(1);
  process.once('SIGINT', forceExit);
  process.once('SIGTERM', forceExit);
  // Stopping on a signal is the normal end: said on stdout, with the other progress lines.
  consoleLogger.info(`keyscope: ${signal}, stopping`);
  await running.stop();
  consoleLogger.info('keyscope: stopped');
  return 0;
}

/** Runs `start`; if it fails, removes the database file it created (and its WAL), so a retry starts clean. */
async function withoutNewDatabaseOnFailure<T>(path: string, start: () => Promise<T>): Promise<T> {
  const created = path !== ':memory:' && !existsSync(path);
  try {
    return await start();
  } catch (error) {
    if (created) for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
    throw error;
  }
}

export async function runCli(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  try {
    switch (command) {
      case 'serve':
      case 'demo':
        return await serve(args, command);
      case 'analyze':
        return await analyze(args);
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(`${USAGE}\n`);
        return 0;
      default:
        process.stderr.write(
          `${command === undefined ? 'keyscope: a command is required' : `keyscope: unknown command '${command}'`}\n\n${USAGE}\n`,
        );
        return 2;
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(
        `keyscope ${command}: ${error.message}\nrun 'keyscope ${command} --help' for usage\n`,
      );
      return 2;
    }
    if (isKeyscopeError(error)) {
      process.stderr.write(`keyscope ${command}: ${error.message} (${error.code})\n`);
      return 1;
    }
    process.stderr.write(`keyscope ${command}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  process.exit(await runCli(process.argv.slice(2)));
}
