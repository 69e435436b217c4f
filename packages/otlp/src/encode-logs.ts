import { attributesJson, checkId } from './encode-json.ts';
import { idBytes, writeAttributes } from './encode-protobuf.ts';
import type { LogRecord } from './log-record.ts';
import {
  ANY_VALUE,
  EXPORT_LOGS_SERVICE_REQUEST,
  INSTRUMENTATION_SCOPE,
  LOG_RECORD,
  RESOURCE,
  RESOURCE_LOGS,
  SCOPE_LOGS,
} from './otlp-fields.ts';
import { groupSpans } from './span-groups.ts';
import { microsFromMillis, nanoStringFromMicros } from './time.ts';
import { WireWriter } from './wire-writer.ts';

/**
 * Encodes log records as a protobuf `ExportLogsServiceRequest` (for the simulator, the demo and
 * tests; the pipeline itself only decodes). Grouping, time precision and attribute values are
 * those of `encodeTraces`; unset ids, times (0), severity, texts and a null body are left out, so
 * `decodeLogs(encodeLogs(records))` equals `records` for a grouped batch whose times are whole
 * microseconds. Throws RangeError/TypeError for records that cannot be encoded.
 */
export function encodeLogs(records: readonly LogRecord[]): Uint8Array {
  const w = new WireWriter(Math.max(1024, records.length * 384));
  for (const [resource, scopes] of groupSpans(records)) {
    const resourceLogs = w.beginMessage(EXPORT_LOGS_SERVICE_REQUEST.tag.resourceLogs);
    const resourceMessage = w.beginMessage(RESOURCE_LOGS.tag.resource);
    writeAttributes(w, RESOURCE.tag.attributes, resource.attributes, 0);
    w.endMessage(resourceMessage);
    for (const [scope, members] of scopes) {
      const scopeLogs = w.beginMessage(RESOURCE_LOGS.tag.scopeLogs);
      const scopeMessage = w.beginMessage(SCOPE_LOGS.tag.scope);
      if (scope.name !== '') w.stringField(INSTRUMENTATION_SCOPE.tag.name, scope.name);
      if (scope.version !== '') w.stringField(INSTRUMENTATION_SCOPE.tag.version, scope.version);
      w.endMessage(scopeMessage);
      for (const record of members) writeLogRecord(w, record);
      w.endMessage(scopeLogs);
    }
    w.endMessage(resourceLogs);
  }
  return w.finish();
}

function writeLogRecord(w: WireWriter, record: LogRecord): void {
  const message = w.beginMessage(SCOPE_LOGS.tag.logRecords);
  if (record.timeUnixMillis !== 0) {
    w.tag(LOG_RECORD.tag.timeUnixNano);
    w.fixed64Micros(microsFromMillis(record.timeUnixMillis));
  }
  if (record.observedTimeUnixMillis !== 0) {
    w.tag(LOG_RECORD.tag.observedTimeUnixNano);
    w.fixed64Micros(microsFromMillis(record.observedTimeUnixMillis));
  }
  if (record.severityNumber !== 0) {
    w.tag(LOG_RECORD.tag.severityNumber);
    w.varint(record.severityNumber);
  }
  if (record.severityText !== '') w.stringField(LOG_RECORD.tag.severityText, record.severityText);
  if (record.body !== null) {
    const body = w.beginMessage(LOG_RECORD.tag.body);
    w.stringField(ANY_VALUE.tag.stringValue, record.body);
    w.endMessage(body);
  }
  writeAttributes(w, LOG_RECORD.tag.attributes, record.attributes, 0);
  if (record.traceId !== '') w.bytesField(LOG_RECORD.tag.traceId, idBytes('traceId', record.traceId, 16));
  if (record.spanId !== '') w.bytesField(LOG_RECORD.tag.spanId, idBytes('spanId', record.spanId, 8));
  if (record.eventName !== '') w.stringField(LOG_RECORD.tag.eventName, record.eventName);
  w.endMessage(message);
}

/** The OTLP/JSON `ExportLogsServiceRequest` object for `records`, as `encodeTracesJson` writes spans. */
export function encodeLogsJson(records: readonly LogRecord[]): object {
  const resourceLogs: object[] = [];
  for (const [resource, scopes] of groupSpans(records)) {
    const scopeLogs: object[] = [];
    for (const [scope, members] of scopes) {
      scopeLogs.push({
        scope: { name: scope.name, version: scope.version },
        logRecords: members.map(recordJson),
      });
    }
    resourceLogs.push({ resource: { attributes: attributesJson(resource.attributes, 0) }, scopeLogs });
  }
  return { resourceLogs };
}

function recordJson(record: LogRecord): object {
  if (record.traceId !== '') checkId('traceId', record.traceId, 32);
  if (record.spanId !== '') checkId('spanId', record.spanId, 16);
  const nanos = (millis: number) => nanoStringFromMicros(microsFromMillis(millis));
  return {
    timeUnixNano: nanos(record.timeUnixMillis),
    observedTimeUnixNano: nanos(record.observedTimeUnixMillis),
    severityNumber: record.severityNumber,
    severityText: record.severityText,
    ...(record.body === null ? {} : { body: { stringValue: record.body } }),
    attributes: attributesJson(record.attributes, 0),
    traceId: record.traceId,
    spanId: record.spanId,
    eventName: record.eventName,
  };
}
