import { isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import { ANALYZE_RECORD_TOO_LARGE } from './analyze-errors.ts';
import type { InputFormat } from './input-files.ts';
import { type Line, LineSplitter } from './line-splitter.ts';

/** One ExportTraceServiceRequest's bytes, and where it sits in its (decompressed) file. */
export interface InputRecord {
  readonly kind: 'record';
  readonly encoding: 'protobuf' | 'json';
  readonly bytes: Buffer;
  readonly offsetBytes: number;
  /** For records read as lines; null for a whole-file record. */
  readonly line: number | null;
  /** The file's last line had no `\n`: if it fails to parse, the file was cut short. */
  readonly unterminated: boolean;
}

/** Something that is no record; `fatal` when nothing after it in the file can be read. */
export interface BadInput {
  readonly kind: 'bad';
  readonly error: KeyscopeError;
  readonly offsetBytes: number;
  readonly line: number | null;
  readonly fatal: boolean;
}

export type InputItem = InputRecord | BadInput;

/**
 * The requests in one input's decompressed bytes:
 *
 * - `protobuf`: the whole file is one request;
 * - `jsonl`: one request per line (the Collector file exporter's `format: json`), blank lines
 *   skipped — streamed, so a file of any size needs memory for one line only;
 * - `json`: one OTLP/JSON document, pretty-printed or not. But the Collector's file exporter writes
 *   JSON lines under whatever name its `path` says, `traces.json` included: when the first line
 *   is a complete JSON value on its own, the file is read as JSON lines.
 *
 * A record larger than `maxRecordBytes` is refused (ANALYZE_RECORD_TOO_LARGE); for JSON lines only
 * that line. Stream errors (gzip, I/O) end the input with a fatal item at the line they hit.
 */
export async function* readRecords(
  format: InputFormat,
  chunks: AsyncIterable<Buffer>,
  maxRecordBytes: number,
): AsyncGenerator<InputItem> {
  if (format === 'protobuf') {
    yield* wholeFile(chunks, maxRecordBytes);
    return;
  }
  const splitter = new LineSplitter(maxRecordBytes);
  try {
    if (format === 'jsonl') {
      for await (const line of splitter.lines(chunks)) {
        const item = lineItem(line, maxRecordBytes);
        if (item !== undefined) yield item;
      }
    } else yield* jsonDocumentOrLines(splitter.lines(chunks), maxRecordBytes);
  } catch (error) {
    if (!isKeyscopeError(error)) throw error;
    const at = splitter.position();
    yield { kind: 'bad', error, offsetBytes: at.offsetBytes, line: at.line, fatal: true };
  }
}

async function* wholeFile(chunks: AsyncIterable<Buffer>, maxRecordBytes: number): AsyncGenerator<InputItem> {
  const parts: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of chunks) {
      length += chunk.length;
      if (length > maxRecordBytes) {
        yield {
          kind: 'bad',
          error: tooLarge('a .pb file holds one request, which', null, maxRecordBytes),
          offsetBytes: 0,
          line: null,
          fatal: true,
        };
        return;
      }
      parts.push(chunk);
    }
  } catch (error) {
    if (!isKeyscopeError(error)) throw error;
    yield { kind: 'bad', error, offsetBytes: length, line: null, fatal: true };
    return;
  }
  yield {
    kind: 'record',
    encoding: 'protobuf',
    // A file read in one chunk (the usual case) is not copied again.
    bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts, length),
    offsetBytes: 0,
    line: null,
    unterminated: false,
  };
}

function lineItem(line: Line, maxRecordBytes: number): InputItem | undefined {
  if (line.oversized) {
    return {
      kind: 'bad',
      error: tooLarge('a JSON line', line.lengthBytes, maxRecordBytes),
      offsetBytes: line.offsetBytes,
      line: line.number,
      fatal: false,
    };
  }
  if (isBlank(line.bytes)) return undefined;
  return {
    kind: 'record',
    encoding: 'json',
    bytes: line.bytes,
    offsetBytes: line.offsetBytes,
    line: line.number,
    unterminated: !line.terminated,
  };
}

async function* jsonDocumentOrLines(
  lines: AsyncIterable<Line>,
  maxRecordBytes: number,
): AsyncGenerator<InputItem> {
  let mode: 'undecided' | 'lines' | 'document' = 'undecided';
  const document: Buffer[] = [];
  let documentBytes = 0;
  for await (const line of lines) {
    if (mode === 'undecided' && !line.oversized && isBlank(line.bytes)) continue;
    if (mode === 'undecided') mode = !line.oversized && isCompleteJson(line.bytes) ? 'lines' : 'document';
    if (mode === 'lines') {
      const item = lineItem(line, maxRecordBytes);
      if (item !== undefined) yield item;
      continue;
    }
    documentBytes += line.lengthBytes + (line.terminated ? 1 : 0);
    if (line.oversized || documentBytes > maxRecordBytes) {
      yield {
        kind: 'bad',
        error: tooLarge('a .json file holds one request, which', null, maxRecordBytes),
        offsetBytes: 0,
        line: null,
        fatal: true,
      };
      return;
    }
    // Copied: a line may view a chunk that the stream reuses once the next line is read.
    document.push(Buffer.from(line.bytes));
    if (line.terminated) document.push(NEWLINE);
  }
  if (mode === 'document') {
    yield {
      kind: 'record',
      encoding: 'json',
      bytes: Buffer.concat(document),
      offsetBytes: 0,
      line: null,
      unterminated: false,
    };
  }
}

const NEWLINE = Buffer.from('\n');

function isBlank(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  }
  return true;
}

function isCompleteJson(bytes: Buffer): boolean {
  try {
    JSON.parse(bytes.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

/** `lengthBytes`: how long it is, or null when reading stopped at the limit. */
function tooLarge(what: string, lengthBytes: number | null, maxRecordBytes: number): KeyscopeError {
  return new KeyscopeError(
    ANALYZE_RECORD_TOO_LARGE,
    `${what} must be at most ${mib(maxRecordBytes)} (--max-record-mib), received ${lengthBytes === null ? 'more' : mib(lengthBytes)}`,
  );
}

function mib(bytes: number): string {
  return `${Number((bytes / (1024 * 1024)).toFixed(2))} MiB`;
}
