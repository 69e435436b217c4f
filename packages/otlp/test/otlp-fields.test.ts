import { describe, expect, it } from 'vitest';
import * as fields from '../src/otlp-fields.ts';
import type { ProtoMessage } from '../src/proto-message.ts';
import { official } from './support/reference-decoder.ts';

const keyValue = { key: 'k', value: { stringValue: 'v' } };
const id = (bytes: number) => new Uint8Array(bytes).fill(1);

/**
 * Each table, with the official class and messages (protobufjs `fromObject` form) that between
 * them set every field the official protos declare, oneof members one message each.
 */
const cases: [
  ProtoMessage,
  { encode(message: unknown): { finish(): Uint8Array }; fromObject(o: object): unknown },
  object[],
][] = [
  [fields.EXPORT_TRACE_SERVICE_REQUEST, official.ExportTraceServiceRequest, [{ resourceSpans: [{}] }]],
  [fields.EXPORT_TRACE_SERVICE_RESPONSE, official.ExportTraceServiceResponse, [{ partialSuccess: {} }]],
  [
    fields.EXPORT_TRACE_PARTIAL_SUCCESS,
    official.ExportTracePartialSuccess,
    [{ rejectedSpans: 1, errorMessage: 'e' }],
  ],
  [fields.RESOURCE_SPANS, official.ResourceSpans, [{ resource: {}, scopeSpans: [{}], schemaUrl: 'u' }]],
  [fields.RESOURCE, official.Resource, [{ attributes: [keyValue], droppedAttributesCount: 1 }]],
  [fields.SCOPE_SPANS, official.ScopeSpans, [{ scope: {}, spans: [{}], schemaUrl: 'u' }]],
  [
    fields.INSTRUMENTATION_SCOPE,
    official.InstrumentationScope,
    [{ name: 'n', version: 'v', attributes: [keyValue], droppedAttributesCount: 1 }],
  ],
  [
    fields.SPAN,
    official.Span,
    [
      {
        traceId: id(16),
        spanId: id(8),
        traceState: 's',
        parentSpanId: id(8),
        name: 'n',
        kind: 2,
        startTimeUnixNano: 1,
        endTimeUnixNano: 2,
        attributes: [keyValue],
        droppedAttributesCount: 1,
        events: [{}],
        droppedEventsCount: 1,
        links: [{ traceId: id(16), spanId: id(8) }],
        droppedLinksCount: 1,
        status: { code: 1 },
      },
    ],
  ],
  [
    fields.SPAN_EVENT,
    official.SpanEvent,
    [{ timeUnixNano: 1, name: 'n', attributes: [keyValue], droppedAttributesCount: 1 }],
  ],
  [fields.STATUS, official.Status, [{ message: 'm', code: 2 }]],
  [fields.KEY_VALUE, official.KeyValue, [keyValue]],
  [
    fields.ANY_VALUE,
    official.AnyValue,
    [
      { stringValue: 's' },
      { boolValue: true },
      { intValue: 1 },
      { doubleValue: 1.5 },
      { arrayValue: {} },
      { kvlistValue: {} },
      { bytesValue: id(1) },
    ],
  ],
  [fields.ARRAY_VALUE, official.ArrayValue, [{ values: [{}] }]],
  [fields.KEY_VALUE_LIST, official.KeyValueList, [{ values: [keyValue] }]],
  [fields.EXPORT_LOGS_SERVICE_REQUEST, official.ExportLogsServiceRequest, [{ resourceLogs: [{}] }]],
  [fields.EXPORT_LOGS_SERVICE_RESPONSE, official.ExportLogsServiceResponse, [{ partialSuccess: {} }]],
  [
    fields.EXPORT_LOGS_PARTIAL_SUCCESS,
    official.ExportLogsPartialSuccess,
    [{ rejectedLogRecords: 1, errorMessage: 'e' }],
  ],
  [fields.RESOURCE_LOGS, official.ResourceLogs, [{ resource: {}, scopeLogs: [{}], schemaUrl: 'u' }]],
  [fields.SCOPE_LOGS, official.ScopeLogs, [{ scope: {}, logRecords: [{}], schemaUrl: 'u' }]],
  [
    fields.LOG_RECORD,
    official.LogRecord,
    [
      {
        timeUnixNano: 1,
        observedTimeUnixNano: 2,
        severityNumber: 9,
        severityText: 'INFO',
        body: { stringValue: 'b' },
        attributes: [keyValue],
        droppedAttributesCount: 1,
        flags: 1,
        traceId: id(16),
        spanId: id(8),
      },
    ],
  ],
];

/** The tags of a message's top-level fields, as the bytes hold them. */
function topLevelTags(bytes: Uint8Array): Set<number> {
  const tags = new Set<number>();
  let pos = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (pos >= bytes.length) throw new Error(`varint runs past byte ${bytes.length}`);
      const byte = bytes[pos++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (pos < bytes.length) {
    const tag = varint();
    tags.add(tag);
    const wireType = tag & 7;
    if (wireType === 0) varint();
    else if (wireType === 1) pos += 8;
    else if (wireType === 2) {
      const length = varint();
      pos += length;
    } else if (wireType === 5) pos += 4;
    else throw new Error(`wire type ${wireType}`);
  }
  return tags;
}

describe('OTLP field tables', () => {
  it.each(cases.map(([message, type, objects]) => [message.name, message, type, objects] as const))(
    '%s: every field has the number and wire type the official protos give it',
    (_name, message, type, objects) => {
      const written = new Set<number>();
      for (const object of objects) {
        for (const tag of topLevelTags(type.encode(type.fromObject(object)).finish())) written.add(tag);
      }
      const declared = new Set(Object.values(message.tag));
      // Span.flags (16, fixed32) is newer than the reference's protos (opentelemetry-proto 1.5
      // declares it); its tag is checked by hand.
      if (message === fields.SPAN) {
        expect(fields.SPAN.tag.flags).toBe((16 << 3) | 5);
        declared.delete(fields.SPAN.tag.flags);
      }
      // LogRecord.event_name (12, string) is newer than the reference's protos too.
      if (message === fields.LOG_RECORD) {
        expect(fields.LOG_RECORD.tag.eventName).toBe((12 << 3) | 2);
        declared.delete(fields.LOG_RECORD.tag.eventName);
      }
      expect([...declared].sort((a, b) => a - b)).toEqual([...written].sort((a, b) => a - b));
    },
  );
});
