import { isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import { decodeTraces, decodeTracesJson, OTLP_JSON, type Span } from '@keyscope/otlp';
import type { Analysis } from './analysis.ts';
import { ANALYZE_TRUNCATED } from './analyze-errors.ts';
import { type ByteCounter, decompressedChunks } from './decompressed-chunks.ts';
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
  for (const input of inputs) {
    summary.files++;
    const counter: ByteCounter = { rawBytes: 0, gzip: false };
    const readBefore = summary.bytesRead;
    const raw = input.stdin
      ? (options.stdin as AsyncIterable<Buffer>)
      : fileChunks(input.path, READ_CHUNK_BYTES);
    const chunks = decompressedChunks(raw, input.gzipSuffix, counter);
    let clean = true;
    try {
      for await (const item of readRecords(input.format, chunks, options.maxRecordBytes)) {
        const decompressed = counter.gzip;
        const bad =
          item.kind === 'bad'
            ? badRecord(input, item.error, item.offsetBytes, item.line, decompressed)
            : ingest(item, input, analysis, decompressed);
        summary.bytesRead = readBefore + counter.rawBytes;
        if (bad === null) {
          summary.records++;
          summary.analysedAny = true;
          options.onProgress?.(summary.bytesRead, analysis.counts.spans);
          continue;
        }
        summary.badRecords++;
        clean = false;
        if (!options.keepGoing) return { summary, stoppedAt: bad };
        options.onBadRecord(bad);
      }
    } finally {
      summary.bytesRead = readBefore + counter.rawBytes;
      // Closes the file when its records were not read to the end.
      if (!input.stdin) await (raw as AsyncGenerator<Buffer>).return(undefined);
    }
    if (clean) summary.analysedAny = true;
  }
  return { summary, stoppedAt: null };
}

/** Decodes and analyses one record; the bad record when it does not decode. */
function ingest(
  record: InputRecord,
  input: InputFile,
  analysis: Analysis,
  decompressed: boolean,
): BadRecord | null {
  let spans: Span[];
  try {
    spans =
      record.encoding === 'protobuf'
        ? decodeTraces(record.bytes, analysis.decodeOptions)
        : decodeTracesJson(record.bytes, analysis.decodeOptions);
  } catch (error) {
    if (!isKeyscopeError(error)) throw error;
    // The Collector ends every line with \n: a last line without one that is not even JSON was cut.
    const cut = record.unterminated && error.code === OTLP_JSON.code && error.cause instanceof SyntaxError;
    const reported = cut
      ? new KeyscopeError(
          ANALYZE_TRUNCATED,
          `the last line must be a complete JSON record, received one cut short without a newline (${error.message})`,
          { cause: error },
        )
      : error;
    return badRecord(input, reported, record.offsetBytes, record.line, decompressed, record.encoding);
  }
  analysis.ingest(spans);
  return null;
}

/** The protobuf decoder ends its messages with the offset inside the record. */
const DECODER_OFFSET = / \((?:span )?at byte (\d+)\)$/;

function badRecord(
  input: InputFile,
  error: KeyscopeError,
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
