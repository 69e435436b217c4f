import { readFile } from 'node:fs/promises';
import { defaultMapping, loadMapping, type Mapping } from '@keyscope/attempts';
import { defaultServeConfig, type ServeConfig } from '../config.ts';
import { detectorConfigOf } from '../pipeline/detector-settings.ts';
import { exportChunks } from '../presentation/finding-export.ts';
import { Analysis } from './analysis.ts';
import { ANALYZE_INPUT_UNREADABLE, ANALYZE_NO_INPUT } from './analyze-errors.ts';
import { analyzeInputs, type BadRecord, describeBadRecord } from './analyze-inputs.ts';
import { ExtractWorkers } from './extract-workers.ts';
import { listInputs, type SkippedPath } from './input-files.ts';
import { analysisJson } from './json-report.ts';
import { createProgressMeter } from './progress-meter.ts';
import { DEFAULT_TABLE_LIMIT, DEFAULT_WIDTH_COLUMNS, renderTable } from './table-report.ts';

export type AnalyzeFormat = 'table' | 'json' | 'csv' | 'ndjson';
export const ANALYZE_FORMATS: readonly AnalyzeFormat[] = ['table', 'json', 'csv', 'ndjson'];

/** `keyscope analyze`'s parsed command line. */
export interface AnalyzeOptions {
  readonly paths: readonly string[];
  readonly format: AnalyzeFormat;
  /** The attribute mapping file (as serve's `mapping.file`); undefined for the defaults. */
  readonly mappingFile: string | undefined;
  readonly keepGoing: boolean;
  /** Largest .pb/.json file or JSON line, after decompression. */
  readonly maxRecordBytes: number;
  /** Threads in all: 1 decodes, extracts and detects on this one; N > 1 decodes and extracts on N − 1 more. */
  readonly threads?: number;
  /**
   * The table's width in columns (`--width`; 0 for no limit); undefined for the terminal's, or
   * `DEFAULT_WIDTH_COLUMNS` when stdout is not one.
   */
  readonly widthColumns?: number;
  /** Incidents and findings the table shows (`--limit`; 0 for all); `DEFAULT_TABLE_LIMIT` when absent. */
  readonly limit?: number;
  /** The detector settings of serve's settings file (`--config`); serve's defaults when absent. */
  readonly detector?: ServeConfig['detector'];
}

export const DEFAULT_MAX_RECORD_MIB = 64;
export const MAX_ANALYZE_THREADS = 64;

/**
 * One thread: on the shared two-core machines keyscope is measured on, an extraction thread made
 * analyze slower (0.79–0.98× of one thread in the archive section, docs/performance.md): the
 * detector stays on the main thread, which sheds only decoding and extraction, while the run
 * spends ~40% more CPU in all (a second isolate, its own compiled code and collections, more of
 * them on the main one). `--threads` is there for machines with cores to spare.
 */
export function defaultAnalyzeThreads(): number {
  return 1;
}
/**
 * Exit statuses. `closedPipe` is what a shell reports for a program killed by SIGPIPE (128 + 13),
 * as `yes | head` shows: the reader of stdout went away before the report was written.
 */
export const ANALYZE_EXIT = Object.freeze({ ran: 0, unreadable: 1, usage: 2, closedPipe: 141 });

/** An output stream as far as analyze uses it; process.stdout / process.stderr in the CLI. */
export interface AnalyzeOutput {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(text: string, callback?: (error?: Error | null) => void): unknown;
}

export interface AnalyzeIo {
  readonly stdout: AnalyzeOutput;
  readonly stderr: AnalyzeOutput;
  readonly stdin: NodeJS.ReadableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
}

const PREFIX = 'keyscope analyze: ';
/** Skipped names listed on stderr before "and N more": enough to recognise what was skipped. */
const SKIPPED_NAMES_SHOWN = 5;
/** Findings per chunk written by `--format csv` and `ndjson`, each written before the next is made. */
const EXPORT_BATCH_FINDINGS = 500;

/**
 * Runs `keyscope analyze` and returns its exit status: 0 when it ran (findings or not), 1 when an
 * input is unreadable (or, with keep-going, when nothing at all could be analysed), 141 when the
 * reader of stdout closed it before the whole report was written (`| head`). The report
 * goes to stdout — with `json`, `csv` and `ndjson`, nothing else does — and everything about the
 * run to stderr.
 * A bad mapping file throws its KeyscopeError for the CLI to report.
 */
export async function runAnalyze(options: AnalyzeOptions, io: AnalyzeIo): Promise<number> {
  const mapping = await readMapping(options.mappingFile);
  // serve's detector, with the settings file's detector section when one is given (--config).
  const detectorConfig = detectorConfigOf(options.detector ?? defaultServeConfig().detector, mapping);
  const say = (line: string) => io.stderr.write(`${PREFIX}${line}\n`);

  const listing = await listInputs(options.paths);
  for (const path of listing.unreadable) {
    const bad: BadRecord = {
      path: path.path,
      offsetBytes: null,
      line: null,
      decompressed: false,
      code: ANALYZE_INPUT_UNREADABLE.code,
      message: path.message,
    };
    if (!options.keepGoing) {
      say(describeBadRecord(bad));
      // Only when there is something else to analyse does skipping the path help.
      if (listing.inputs.length > 0) say('--keep-going skips the paths it cannot read and analyses the rest');
      return ANALYZE_EXIT.unreadable;
    }
    say(`skipping ${describeBadRecord(bad)}`);
  }
  if (listing.skipped.length > 0) say(skippedLine(listing.skipped));
  if (listing.inputs.length === 0) {
    say(
      `nothing to analyse: no .pb, .json or .jsonl files (optionally .gz) among the paths (${ANALYZE_NO_INPUT.code})`,
    );
    return ANALYZE_EXIT.unreadable;
  }

  const analysis = new Analysis(mapping, detectorConfig);
  const totalBytes = listing.inputs.some((input) => input.sizeBytes === null)
    ? null
    : listing.inputs.reduce((sum, input) => sum + (input.sizeBytes ?? 0), 0);
  const progress = createProgressMeter(io.stderr, totalBytes);
  const threads = options.threads ?? defaultAnalyzeThreads();
  const workers = threads > 1 ? new ExtractWorkers(threads - 1, analysis.extraction) : undefined;
  let outcome: Awaited<ReturnType<typeof analyzeInputs>>;
  try {
    outcome = await analyzeInputs(listing.inputs, analysis, {
      workers,
      keepGoing: options.keepGoing,
      maxRecordBytes: options.maxRecordBytes,
      stdin: io.stdin,
      onBadRecord: (bad) => {
        progress.clear();
        say(`skipping ${describeBadRecord(bad)}`);
      },
      onProgress: (bytesRead, spans) => progress.update(bytesRead, spans),
    });
  } finally {
    progress.finish();
    await workers?.close();
  }
  if (outcome.stoppedAt !== null) return stop(outcome.stoppedAt, say);
  if (!outcome.summary.analysedAny) {
    say(`nothing was analysed: every input was unreadable (${ANALYZE_NO_INPUT.code})`);
    return ANALYZE_EXIT.unreadable;
  }

  const result = analysis.finish();
  if (options.format === 'csv' || options.format === 'ndjson') {
    const batches = function* () {
      for (let i = 0; i < result.findings.length; i += EXPORT_BATCH_FINDINGS) {
        yield result.findings.slice(i, i + EXPORT_BATCH_FINDINGS);
      }
    };
    for (const chunk of exportChunks(options.format, batches())) {
      if ((await writeAll(io.stdout, chunk)) === 'closed') return ANALYZE_EXIT.closedPipe;
    }
    return ANALYZE_EXIT.ran;
  }
  const report =
    options.format === 'json'
      ? `${JSON.stringify(analysisJson(result), null, 2)}\n`
      : renderTable(
          result,
          {
            files: outcome.summary.files,
            skippedFiles: listing.skipped.length,
            badRecords: outcome.summary.badRecords + listing.unreadable.length,
            bytesRead: outcome.summary.bytesRead,
          },
          {
            colour: io.stdout.isTTY === true && !io.env.NO_COLOR,
            widthColumns: options.widthColumns ?? terminalWidth(io.stdout),
            limit: options.limit ?? DEFAULT_TABLE_LIMIT,
          },
        );
  return (await writeAll(io.stdout, report)) === 'closed' ? ANALYZE_EXIT.closedPipe : ANALYZE_EXIT.ran;
}

/** The terminal's columns; `DEFAULT_WIDTH_COLUMNS` for a pipe or file, or a terminal that does not say. */
function terminalWidth(output: AnalyzeOutput): number {
  const columns = output.columns;
  return output.isTTY === true && columns !== undefined && columns > 0 ? columns : DEFAULT_WIDTH_COLUMNS;
}

function stop(bad: BadRecord, say: (line: string) => void): number {
  say(describeBadRecord(bad));
  say('stopped at the first bad record; --keep-going reports each one and analyses the rest');
  return ANALYZE_EXIT.unreadable;
}

function skippedLine(skipped: readonly SkippedPath[]): string {
  const shown = skipped.slice(0, SKIPPED_NAMES_SHOWN).map((s) => s.path);
  const more = skipped.length > shown.length ? ` and ${skipped.length - shown.length} more` : '';
  const what = skipped.length === 1 ? 'file that is' : 'files that are';
  return `skipped ${skipped.length} ${what} not .pb, .json or .jsonl (optionally .gz): ${shown.join(', ')}${more}`;
}

async function readMapping(file: string | undefined): Promise<Mapping> {
  if (file === undefined) return defaultMapping();
  return loadMapping(await readFile(file, 'utf8'), file);
}

/**
 * Resolves once the text is handed to the OS, so exiting right after loses none of a large report;
 * 'closed' when the reader went away (`| head`), which is not analyze's failure: nothing more is
 * written, and the run ends as a program killed by SIGPIPE would.
 */
function writeAll(output: AnalyzeOutput, text: string): Promise<'written' | 'closed'> {
  return new Promise((resolve, reject) => {
    output.write(text, (error) => {
      if (!error) resolve('written');
      else if ((error as NodeJS.ErrnoException).code === 'EPIPE') resolve('closed');
      else reject(error);
    });
  });
}
