import { createAttributes } from './attributes.ts';
import { type DecodeOptions, resolveDecodeOptions } from './decode-options.ts';
import { hexOf8 } from './hex.ts';
import { type DecodedLogs, type LogRecord, MAX_SEVERITY_NUMBER } from './log-record.ts';
import {
  ANY_VALUE,
  EXPORT_LOGS_SERVICE_REQUEST,
  LOG_RECORD,
  RESOURCE_LOGS,
  SCOPE_LOGS,
} from './otlp-fields.ts';
import { checkId, isZero, ProtobufDecoderState, ProtobufRequestReader } from './request-reader.ts';
import type { Attributes, InstrumentationScope, Resource } from './span.ts';
import { decodeUtf8 } from './utf8.ts';

/* The tags of the fields the decoder reads (otlp-fields.ts), as number constants (see request-reader.ts). */
const EXPORT_LOGS_SERVICE_REQUEST_RESOURCE_LOGS = EXPORT_LOGS_SERVICE_REQUEST.tag.resourceLogs;
const RESOURCE_LOGS_RESOURCE = RESOURCE_LOGS.tag.resource;
const RESOURCE_LOGS_SCOPE_LOGS = RESOURCE_LOGS.tag.scopeLogs;
const SCOPE_LOGS_SCOPE = SCOPE_LOGS.tag.scope;
const SCOPE_LOGS_LOG_RECORDS = SCOPE_LOGS.tag.logRecords;
const LOG_RECORD_TIME_UNIX_NANO = LOG_RECORD.tag.timeUnixNano;
const LOG_RECORD_OBSERVED_TIME_UNIX_NANO = LOG_RECORD.tag.observedTimeUnixNano;
const LOG_RECORD_SEVERITY_NUMBER = LOG_RECORD.tag.severityNumber;
const LOG_RECORD_SEVERITY_TEXT = LOG_RECORD.tag.severityText;
const LOG_RECORD_BODY = LOG_RECORD.tag.body;
const LOG_RECORD_ATTRIBUTES = LOG_RECORD.tag.attributes;
const LOG_RECORD_TRACE_ID = LOG_RECORD.tag.traceId;
const LOG_RECORD_SPAN_ID = LOG_RECORD.tag.spanId;
const LOG_RECORD_EVENT_NAME = LOG_RECORD.tag.eventName;
const ANY_VALUE_STRING_VALUE = ANY_VALUE.tag.stringValue;

const NO_ATTRIBUTES: Attributes = Object.freeze(createAttributes());

/**
 * Decodes protobuf `ExportLogsServiceRequest`s (or `LogsData`, the same layout) into keyscope log
 * records, under the options it was made with, one request at a time. The options are those of
 * the trace decoders (decode-options.ts): `spanAttributes` selects the records' own attributes,
 * `resourceAttributes` their resources'; `events` does not apply.
 *
 * Under a `KeyedAttributeSelection`, a record that carries none of its `keys` (among its own
 * attributes or its resource's kept ones) is read and checked like any other, counted in
 * `recordCount`, and not returned: a log record says something to keyscope only when it names a
 * key (`unkeyedKinds` does not apply). Its strings (body, severity text, event name) and times are
 * then never decoded.
 *
 * Resources are shared and cached as the trace decoder's are (resource-cache.ts); the result
 * never aliases `bytes`. Every malformed input fails with a KeyscopeError carrying one of the
 * codes in errors.ts, and leaves the decoder as usable as before.
 */
export interface LogsDecoder {
  decodeLogs(bytes: Uint8Array): LogRecord[];
  /** Like `decodeLogs`, with the number of log records the request held, returned or not. */
  decodeLogRequest(bytes: Uint8Array): DecodedLogs;
}

/**
 * A decoder with caches of its own (see `ProtobufDecoderState`): make one per consumer of a stream
 * of payloads and keep it. Throws TypeError/RangeError for invalid options (see decode-options.ts).
 */
export function createLogsDecoder(options?: DecodeOptions): LogsDecoder {
  return new ProtobufLogsDecoder(resolveDecodeOptions(options));
}

/** The decoders `decodeLogs` keeps: one per options object it was passed, held while the object lives. */
const decodersByOptions = new WeakMap<DecodeOptions, LogsDecoder>();
let defaultDecoder: LogsDecoder | undefined;

function decoderFor(options: DecodeOptions | undefined): LogsDecoder {
  if (options === undefined) return (defaultDecoder ??= createLogsDecoder());
  let decoder = decodersByOptions.get(options);
  if (decoder === undefined) {
    decoder = createLogsDecoder(options);
    decodersByOptions.set(options, decoder);
  }
  return decoder;
}

/**
 * `LogsDecoder.decodeLogs` with the decoder kept for `options` (one per options object, and one
 * for none), as `decodeTraces` keeps its own: pass the same options object with every payload.
 */
export function decodeLogs(bytes: Uint8Array, options?: DecodeOptions): LogRecord[] {
  return decoderFor(options).decodeLogs(bytes);
}

/** Like `decodeLogs`, with the number of log records the request held, returned or not. */
export function decodeLogRequest(bytes: Uint8Array, options?: DecodeOptions): DecodedLogs {
  return decoderFor(options).decodeLogRequest(bytes);
}

class ProtobufLogsDecoder extends ProtobufDecoderState implements LogsDecoder {
  decodeLogs(bytes: Uint8Array): LogRecord[] {
    return new LogRequestReader(bytes, this).request();
  }

  decodeLogRequest(bytes: Uint8Array): DecodedLogs {
    const reader = new LogRequestReader(bytes, this);
    const records = reader.request();
    return { records, recordCount: reader.recordCount };
  }
}

/** One request's decoding, with its decoder's options and caches. */
class LogRequestReader extends ProtobufRequestReader {
  private readonly records: LogRecord[] = [];
  /** Records read, returned or not. */
  recordCount = 0;

  request(): LogRecord[] {
    const r = this.r;
    const end = this.bytes.length;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === EXPORT_LOGS_SERVICE_REQUEST_RESOURCE_LOGS) this.resourceLogs(r.lengthEnd(end));
      else r.skip(tag, end, EXPORT_LOGS_SERVICE_REQUEST);
    }
    return this.records;
  }

  private resourceLogs(end: number): void {
    const r = this.r;
    const start = r.pos;
    const resource = this.containerResource(end, RESOURCE_LOGS);
    r.pos = start;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === RESOURCE_LOGS_SCOPE_LOGS) this.scopeLogs(r.lengthEnd(end), resource);
      else if (tag === RESOURCE_LOGS_RESOURCE) r.pos = r.lengthEnd(end);
      else r.skip(tag, end, RESOURCE_LOGS);
    }
  }

  private scopeLogs(end: number, resource: Resource): void {
    const r = this.r;
    const scope: InstrumentationScope = { name: '', version: '' };
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === SCOPE_LOGS_LOG_RECORDS) {
        const record = this.logRecord(r.lengthEnd(end), resource, scope);
        if (record !== null) this.records.push(record);
      } else if (tag === SCOPE_LOGS_SCOPE) this.scope(r.lengthEnd(end), scope);
      else r.skip(tag, end, SCOPE_LOGS);
    }
  }

  /** The log record at [pos, end); null when a keyed selection leaves it out. */
  private logRecord(end: number, resource: Resource, scope: InstrumentationScope): LogRecord | null {
    const r = this.r;
    const bytes = this.bytes;
    let traceAt = -1;
    let spanAt = -1;
    // Where the times and strings are: decoded at the end, and only for a record that is returned.
    let timeAt = -1;
    let observedAt = -1;
    let severityNumber = 0;
    let severityTextAt = -1;
    let severityTextEnd = -1;
    let bodyAt = -1;
    let bodyEnd = -1;
    let eventNameAt = -1;
    let eventNameEnd = -1;
    const keys = this.attributeKeys;
    let attributes: Attributes | null = keys === null ? createAttributes() : null;
    const selection = this.selection;
    if (selection !== null) selection.beginSpan();
    while (r.pos < end) {
      const tag = r.tag(end);
      switch (tag) {
        case LOG_RECORD_TRACE_ID: {
          const fieldEnd = r.lengthEnd(end);
          traceAt = optionalId('trace id', r.view, r.pos, fieldEnd, 16);
          r.pos = fieldEnd;
          break;
        }
        case LOG_RECORD_SPAN_ID: {
          const fieldEnd = r.lengthEnd(end);
          spanAt = optionalId('span id', r.view, r.pos, fieldEnd, 8);
          r.pos = fieldEnd;
          break;
        }
        case LOG_RECORD_TIME_UNIX_NANO:
          timeAt = r.fixed64At(end);
          break;
        case LOG_RECORD_OBSERVED_TIME_UNIX_NANO:
          observedAt = r.fixed64At(end);
          break;
        case LOG_RECORD_SEVERITY_NUMBER:
          severityNumber = r.varint32(end);
          break;
        case LOG_RECORD_SEVERITY_TEXT:
          severityTextEnd = r.lengthEnd(end);
          severityTextAt = r.pos;
          r.pos = severityTextEnd;
          break;
        case LOG_RECORD_BODY:
          bodyEnd = r.lengthEnd(end);
          bodyAt = r.pos;
          r.pos = bodyEnd;
          break;
        case LOG_RECORD_EVENT_NAME:
          eventNameEnd = r.lengthEnd(end);
          eventNameAt = r.pos;
          r.pos = eventNameEnd;
          break;
        case LOG_RECORD_ATTRIBUTES:
          if (keys === null) this.keyValue(r.lengthEnd(end), attributes!, 0);
          else attributes = this.selectedKeyValue(r.lengthEnd(end), attributes, keys, selection);
          break;
        default:
          r.skip(tag, end, LOG_RECORD);
      }
    }
    this.recordCount++;
    if (selection !== null && !selection.keyed) return null;
    const record: LogRecord = {
      traceId: traceAt === -1 ? '' : this.traceIdCache.get(bytes, r.view, traceAt),
      spanId: spanAt === -1 ? '' : hexOf8(bytes, spanAt),
      timeUnixMillis: timeAt === -1 ? 0 : r.millisAt(timeAt),
      observedTimeUnixMillis: observedAt === -1 ? 0 : r.millisAt(observedAt),
      severityNumber: severityNumber <= MAX_SEVERITY_NUMBER ? severityNumber : 0,
      // Severity texts and event names repeat, like span names: cached as short values are.
      severityText:
        severityTextAt === -1 ? '' : this.valueCache.get(bytes, r.view, severityTextAt, severityTextEnd),
      body: bodyAt === -1 ? null : this.stringBody(bodyAt, bodyEnd),
      eventName: eventNameAt === -1 ? '' : this.valueCache.get(bytes, r.view, eventNameAt, eventNameEnd),
      attributes: attributes ?? NO_ATTRIBUTES,
      resource,
      scope,
    };
    r.pos = end;
    return record;
  }

  /**
   * The body AnyValue at [start, end) when it holds a string, else null. Other values are skipped
   * by their framing, never decoded (keyscope reads no structured body); a oneof written twice
   * keeps the last, as protobuf does.
   */
  private stringBody(start: number, end: number): string | null {
    const r = this.r;
    r.pos = start;
    let body: string | null = null;
    while (r.pos < end) {
      const tag = r.tag(end);
      if (tag === ANY_VALUE_STRING_VALUE) {
        const stringEnd = r.lengthEnd(end);
        body = decodeUtf8(this.bytes, r.pos, stringEnd);
        r.pos = stringEnd;
      } else {
        const fieldNumber = tag >>> 3;
        r.skip(tag, end, ANY_VALUE);
        if (ANY_VALUE.fields[fieldNumber] !== undefined) body = null;
      }
    }
    return body;
  }
}

/**
 * Where an optional id of a log record starts, or -1 when it has none: empty or all zeros, which
 * the OTLP specification reads as "not associated with a trace". Another length fails the payload.
 */
function optionalId(what: string, view: DataView, at: number, end: number, size: number): number {
  if (end === at) return -1;
  checkId(what, at, end, size);
  return isZero(view, at, size) ? -1 : at;
}
