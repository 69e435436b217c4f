import { carriesKey, createAttributes } from './attributes.ts';
import { type DecodeOptions, resolveDecodeOptions } from './decode-options.ts';
import {
  asObject,
  enumValue,
  type JsonObject,
  JsonRequestReader,
  list,
  optionalId,
  parseJsonPayload,
  pick,
  string,
  time,
  withPath,
  wrongType,
} from './json-reader.ts';
import { type DecodedLogs, type LogRecord, MAX_SEVERITY_NUMBER } from './log-record.ts';
import type { Attributes, InstrumentationScope, Resource } from './span.ts';

/**
 * Decodes an OTLP/JSON `ExportLogsServiceRequest` into the same log records `decodeLogs` gives for
 * the protobuf form, by the JSON mapping the trace decoder reads (decode-json.ts: field names in
 * either case, null as absent, int64 times as strings or numbers, hex ids). Ids are optional:
 * absent, empty or all zeros mean none; another length is OTLP_ID_LENGTH. `severityNumber` is an
 * integer or its proto name (`SEVERITY_NUMBER_INFO`); integers outside 0–24 become 0. A body
 * other than a string is checked to be an object and not read.
 *
 * Under a keyed selection, records without a key are checked, counted and not returned, as
 * `decodeLogs` does.
 */
export function decodeLogsJson(input: string | Uint8Array, options?: DecodeOptions): LogRecord[] {
  return decodeLogRequestJson(input, options).records;
}

/** Like `decodeLogsJson`, with the number of log records the request held, returned or not. */
export function decodeLogRequestJson(input: string | Uint8Array, options?: DecodeOptions): DecodedLogs {
  const decoder = new JsonLogsDecoder(resolveDecodeOptions(options));
  const records = decoder.request(parseJsonPayload(input));
  return { records, recordCount: decoder.recordCount };
}

const SEVERITY_NUMBERS: Record<string, number> = { SEVERITY_NUMBER_UNSPECIFIED: 0 };
['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'].forEach((level, i) => {
  SEVERITY_NUMBERS[`SEVERITY_NUMBER_${level}`] = i * 4 + 1;
  for (let n = 2; n <= 4; n++) SEVERITY_NUMBERS[`SEVERITY_NUMBER_${level}${n}`] = i * 4 + n;
});

class JsonLogsDecoder extends JsonRequestReader {
  private readonly records: LogRecord[] = [];
  /** Records read, returned or not. */
  recordCount = 0;

  request(root: unknown): LogRecord[] {
    const request = asObject(root, 'payload');
    const resourceLogs = list(request, 'resourceLogs', 'resource_logs');
    for (let i = 0; i < resourceLogs.length; i++) {
      try {
        this.resourceLogs(asObject(resourceLogs[i], 'item'));
      } catch (error) {
        throw withPath(error, `resourceLogs[${i}]`);
      }
    }
    return this.records;
  }

  private resourceLogs(message: JsonObject): void {
    const resource = this.resource(message);
    const scopeLogs = list(message, 'scopeLogs', 'scope_logs');
    for (let i = 0; i < scopeLogs.length; i++) {
      try {
        this.scopeLogs(asObject(scopeLogs[i], 'item'), resource);
      } catch (error) {
        throw withPath(error, `scopeLogs[${i}]`);
      }
    }
  }

  private scopeLogs(message: JsonObject, resource: Resource): void {
    const scope = this.scope(message);
    const records = list(message, 'logRecords', 'log_records');
    for (let i = 0; i < records.length; i++) {
      try {
        const record = this.logRecord(asObject(records[i], 'item'), resource, scope);
        if (record !== null) this.records.push(record);
      } catch (error) {
        throw withPath(error, `logRecords[${i}]`);
      }
    }
  }

  /** The record, checked whole; null when a keyed selection leaves it out. */
  private logRecord(message: JsonObject, resource: Resource, scope: InstrumentationScope): LogRecord | null {
    const traceId = optionalId(message, 'traceId', 'trace_id', 'trace id', 16);
    const spanId = optionalId(message, 'spanId', 'span_id', 'span id', 8);
    const attributes: Attributes = createAttributes();
    this.attributes(message, attributes, this.options.spanKeys);
    const severityNumber = enumValue(
      message,
      'severityNumber',
      'severity_number',
      SEVERITY_NUMBERS,
      MAX_SEVERITY_NUMBER,
    );
    const record: LogRecord = {
      traceId,
      spanId,
      timeUnixMillis: time(message, 'timeUnixNano', 'time_unix_nano'),
      observedTimeUnixMillis: time(message, 'observedTimeUnixNano', 'observed_time_unix_nano'),
      severityNumber,
      severityText: string(message, 'severityText', 'severity_text'),
      body: stringBody(message),
      eventName: string(message, 'eventName', 'event_name'),
      attributes,
      resource,
      scope,
    };
    this.recordCount++;
    const selection = this.options.spanSelection;
    if (
      selection !== null &&
      !carriesKey(attributes, selection.keys) &&
      !carriesKey(resource.attributes, selection.keys)
    ) {
      return null;
    }
    return record;
  }
}

function stringBody(message: JsonObject): string | null {
  const body = pick(message, 'body', 'body');
  if (body === undefined) return null;
  const value = pick(asObject(body, 'body'), 'stringValue', 'string_value');
  if (value === undefined) return null;
  if (typeof value !== 'string') throw wrongType('body.stringValue', 'a string', value);
  return value;
}
