import { isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import { type DecodeOptions, decodeTraces, decodeTracesJson, OTLP_JSON, type Span } from '@keyscope/otlp';
import { ANALYZE_TRUNCATED } from './analyze-errors.ts';
import type { InputRecord } from './record-reader.ts';

/** Why a record did not decode, as plain data (it may cross from an extraction thread). */
export interface RecordFailure {
  readonly code: string;
  readonly message: string;
}

/** The record's spans, or why it is no request: a KeyscopeError from the decoder is a failure, anything else is thrown. */
export function decodeRecord(
  record: Pick<InputRecord, 'encoding' | 'bytes' | 'unterminated'>,
  options: DecodeOptions,
): Span[] | RecordFailure {
  try {
    return record.encoding === 'protobuf'
      ? decodeTraces(record.bytes, options)
      : decodeTracesJson(record.bytes, options);
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
    return { code: reported.code, message: reported.message };
  }
}

export function isFailure(decoded: Span[] | RecordFailure): decoded is RecordFailure {
  return !Array.isArray(decoded);
}
