import type { Analysis } from './analysis.ts';
import { decodeRecord, isFailure, type RecordFailure } from './decode-record.ts';
import { type ByteCounter, decompressedChunks } from './decompressed-chunks.ts';
import type { ExtractResult, ExtractWorkers } from './extract-workers.ts';
import { fileChunks } from './file-chunks.ts';
import type { InputFile } from './input-files.ts';
import { type InputRecord, readRecords } from './record-reader.ts';

/** A record (or a whole file) that could not be analysed, located for the person who has the file. */
export interface BadRecord {
  readonly path: string;
  /** In the decompressed bytes when `decompressed`; null when the path itself failed. */
  readonly offsetBytes: number | null;
  /** For JSON lines. */
  readonly line: number | null;
  readonly decompressed: boolean;
  readonly code: string;
  readonly message: string;
}

export interface InputsSummary {
  /** Inputs opened. */
  files: number;
  /** Requests decoded and analysed. */
  records: number;
  badRecords: number;
  /** Read from disk or stdin, before decompression. */
  bytesRead: number;
  /** Something was analysed: a record, or at least one input read to its end without error. */
  analysedAny: boolean;
}

export interface AnalyzeInputsOptions {
  readonly keepGoing: boolean;
  readonly maxRecordBytes: number;
  /** Where `-` reads from. */
  readonly stdin: NodeJS.ReadableStream;
  /** Each bad record with --keep-going (without it, the first one ends the run: see `stoppedAt`). */
  readonly onBadRecord: (bad: BadRecord) => void;
  /** After each record: bytes read so far over all inputs, spans decoded so far. */
  readonly onProgress?: (bytesRead: number, spans: number) => void;
  /** Threads that decode and extract while this one reads and detects; absent: all on this thread. */
  readonly workers?: Pick<ExtractWorkers, 'poll' | 'submit' | 'submitOutcome' | 'drain'>;
}

export interface InputsOutcome {
  summary: InputsSummary;
  /** Without --keep-going: the first bad record, after which nothing more was read. */
  stoppedAt: BadRecord | null;
}

/** Larger reads than the 64 KiB default: fewer chunks, and one syscall per MiB of archive. */
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Reads every input in order, one request at a time, into `analysis`. Memory stays bounded by the
 * largest record (plus the detector's state) whatever the inputs' sizes.
 */
export async function analyzeInputs(
  inputs: readonly InputFile[],
  analysis: Analysis,
  options: AnalyzeInputsOptions,
): Promise<InputsOutcome> {
  const summary: InputsSummary = { files: 0, records: 0, badRecords: 0, bytesRead: 0, analysedAny: false };
  let stoppedAt: BadRecord | null = null;
  const { workers } = options;
  // Records are analysed on this thread until a thread has loaded, then all go to the threads.
  let handOff = false;
  const threaded = async () => {
    if (!handOff && workers !== undefined) handOff = await workers.poll();
    return handOff;
  };
  for (const input of inputs) {
    if (stoppedAt !== null) break;
    summary.files++;
    const counter: ByteCounter = { rawBytes: 0, gzip: false };
    const readBefore = summary.bytesRead;
    const raw = input.stdin
      ? (options.stdin as AsyncIterable<Buffer>)
      : fileChunks(input.path, READ_CHUNK_BYTES);
    const chunks = decompressedChunks(raw, input.gzipSuffix, counter);
    const file = { clean: true };
    // A record's outcome, in the order records were read (with threads, once its turn comes).
    const account = (bad: BadRecord | null) => {
      if (stoppedAt !== null) return;
      if (bad === null) {
        summary.records++;
        summary.analysedAny = true;
        options.onProgress?.(summary.bytesRead, analysis.counts.spans);
        return;
      }
      summary.badRecords++;
      file.clean = false;
      if (!options.keepGoing) stoppedAt = bad;
      else options.onBadRecord(bad);
    };
    try {
      for await (const item of readRecords(input.format, chunks, options.maxRecordBytes)) {
        const decompressed = counter.gzip;
        summary.bytesRead = readBefore + counter.rawBytes;
        if (item.kind === 'bad') {
          const bad = badRecord(input, item.error, item.offsetBytes, item.line, decompressed);
          // Records handed to threads before it come first.
          if (!(await threaded())) account(bad);
          else await workers!.submitOutcome(() => account(bad));
        } else if (!(await threaded())) {
          account(ingest(item, input, analysis, decompressed));
        } else {
          await workers!.submit(item, (result) => {
            if (stoppedAt === null) account(applied(result, item, input, analysis, decompressed));
          });
        }
        if (stoppedAt !== null) break;
      }
    } finally {
      summary.bytesRead = readBefore + counter.rawBytes;
      // Closes the file when its records were not read to the end.
      if (!input.stdin) await (raw as AsyncGenerator<Buffer>).return(undefined);
    }
    // A file read to its end without a bad record was analysed, even when it held no spans.
    const ended = () => {
      if (stoppedAt === null && file.clean) summary.analysedAny = true;
    };
    // With threads, in its turn after the file's records; the next file is read meanwhile: waiting
    // for each file's records here would leave the threads one record at a time to work on.
    if (!handOff) ended();
    else await workers!.submitOutcome(ended);
  }
  if (handOff) await workers!.drain();
  return { summary, stoppedAt };
}

/** Decodes and analyses one record on this thread; the bad record when it does not decode. */
function ingest(
  record: InputRecord,
  input: InputFile,
  analysis: Analysis,
  decompressed: boolean,
): BadRecord | null {
  const decoded = decodeRecord(record, analysis.decodeOptions);
  if (isFailure(decoded))
    return badRecord(input, decoded, record.offsetBytes, record.line, decompressed, record.encoding);
  analysis.ingest(decoded);
  return null;
}

/** Applies one record a thread extracted; the bad record when it did not decode. */
function applied(
  result: ExtractResult,
  record: InputRecord,
  input: InputFile,
  analysis: Analysis,
  decompressed: boolean,
): BadRecord | null {
  if ('failure' in result)
    return badRecord(input, result.failure, record.offsetBytes, record.line, decompressed, record.encoding);
  analysis.apply(result.extract);
  return null;
}

/** The protobuf decoder ends its messages with the offset inside the record. */
const DECODER_OFFSET = / \((?:span )?at byte (\d+)\)$/;

function badRecord(
  input: InputFile,
  error: RecordFailure,
  offsetBytes: number,
  line: number | null,
  decompressed: boolean,
  encoding?: InputRecord['encoding'],
): BadRecord {
  let offset = offsetBytes;
  let message = error.message;
  const at = encoding === 'protobuf' ? DECODER_OFFSET.exec(message) : null;
  if (at !== null) {
    offset += Number(at[1]);
    message = message.slice(0, at.index);
  }
  return { path: input.path, offsetBytes: offset, line, decompressed, code: error.code, message };
}

/** `traces.jsonl.gz: line 3 (byte 1234 decompressed): … (KS_OTLP_JSON)`. */
export function describeBadRecord(bad: BadRecord): string {
  const where: string[] = [];
  if (bad.line !== null) where.push(`line ${bad.line}`);
  if (bad.offsetBytes !== null) {
    const byte = `byte ${bad.offsetBytes}${bad.decompressed ? ' decompressed' : ''}`;
    where.push(bad.line !== null ? `(${byte})` : byte);
  }
  return `${bad.path}${where.length > 0 ? `: ${where.join(' ')}` : ''}: ${bad.message} (${bad.code})`;
}
