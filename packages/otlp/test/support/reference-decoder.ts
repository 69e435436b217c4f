import { createRequire } from 'node:module';
import type {
  Attributes,
  AttributeValue,
  InstrumentationScope,
  Resource,
  Span,
  SpanEvent,
} from '../../src/span.ts';

/**
 * The reference: protobufjs with the code generated from the official opentelemetry-proto
 * definitions, as shipped by @opentelemetry/otlp-transformer 0.200 (installed under the alias
 * `otlp-proto-reference`; later versions dropped protobufjs). Its conversion to keyscope spans is
 * written independently of src/ (BigInt arithmetic, Buffer hex) so both sides can disagree.
 */
const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: generated protobufjs code has no types we can import
const root: any = require('otlp-proto-reference/build/src/generated/root.js');
const v1 = root.opentelemetry.proto;

/** protobufjs static message classes generated from the official .proto files. */
export const official = {
  ExportTraceServiceRequest: v1.collector.trace.v1.ExportTraceServiceRequest,
  ExportTraceServiceResponse: v1.collector.trace.v1.ExportTraceServiceResponse,
  ExportTracePartialSuccess: v1.collector.trace.v1.ExportTracePartialSuccess,
  ResourceSpans: v1.trace.v1.ResourceSpans,
  Resource: v1.resource.v1.Resource,
  ScopeSpans: v1.trace.v1.ScopeSpans,
  InstrumentationScope: v1.common.v1.InstrumentationScope,
  Span: v1.trace.v1.Span,
  SpanEvent: v1.trace.v1.Span.Event,
  Status: v1.trace.v1.Status,
  KeyValue: v1.common.v1.KeyValue,
  AnyValue: v1.common.v1.AnyValue,
  ArrayValue: v1.common.v1.ArrayValue,
  KeyValueList: v1.common.v1.KeyValueList,
  ExportLogsServiceRequest: v1.collector.logs.v1.ExportLogsServiceRequest,
  ExportLogsServiceResponse: v1.collector.logs.v1.ExportLogsServiceResponse,
  ExportLogsPartialSuccess: v1.collector.logs.v1.ExportLogsPartialSuccess,
  ResourceLogs: v1.logs.v1.ResourceLogs,
  ScopeLogs: v1.logs.v1.ScopeLogs,
  LogRecord: v1.logs.v1.LogRecord,
} as const;

/**
 * Encodes a plain object (protobufjs `fromObject` form: camelCase, ids as bytes) with protobufjs.
 * Not verified first: tests send enum values the protos do not name, as newer senders may.
 */
export function officialEncode(request: object): Uint8Array {
  const type = official.ExportTraceServiceRequest;
  return new Uint8Array(type.encode(type.fromObject(request)).finish());
}

// biome-ignore lint/suspicious/noExplicitAny: protobufjs message objects
type Message = any;

/** Decodes with protobufjs and maps to keyscope spans as span.ts specifies. */
export function referenceDecode(bytes: Uint8Array): Span[] {
  const request = official.ExportTraceServiceRequest.decode(bytes);
  const spans: Span[] = [];
  for (const resourceSpans of request.resourceSpans as Message[]) {
    const resource: Resource = { attributes: attributes(resourceSpans.resource?.attributes ?? []) };
    for (const scopeSpans of resourceSpans.scopeSpans as Message[]) {
      const scope: InstrumentationScope = {
        name: scopeSpans.scope?.name || '',
        version: scopeSpans.scope?.version || '',
      };
      for (const span of scopeSpans.spans as Message[]) {
        const parent = hex(span.parentSpanId);
        spans.push({
          traceId: hex(span.traceId),
          spanId: hex(span.spanId),
          parentSpanId: /^0*$/.test(parent) ? '' : parent,
          name: span.name ?? '',
          kind: knownEnum(span.kind, 5),
          startTimeUnixMillis: millis(span.startTimeUnixNano),
          endTimeUnixMillis: millis(span.endTimeUnixNano),
          status: {
            code: knownEnum(span.status?.code, 2),
            message: span.status?.message || '',
          },
          attributes: attributes(span.attributes),
          events: (span.events as Message[]).map(
            (event): SpanEvent => ({
              name: event.name ?? '',
              timeUnixMillis: millis(event.timeUnixNano),
              attributes: attributes(event.attributes),
            }),
          ),
          resource,
          scope,
        });
      }
    }
  }
  return spans;
}

/** protobufjs leaves unset enums null; span.ts maps unset and unknown values to 0. */
// biome-ignore lint/suspicious/noExplicitAny: the result is the span.ts enum of the caller
function knownEnum(value: number | null | undefined, max: number): any {
  return typeof value === 'number' && value >= 0 && value <= max ? value : 0;
}

function hex(bytes: Uint8Array | null | undefined): string {
  return bytes == null ? '' : Buffer.from(bytes).toString('hex');
}

/** The documented precision: nanoseconds truncated to whole microseconds, then / 1000. */
function millis(nanos: Message): number {
  const value = BigInt(nanos.toString());
  return Number(value / 1000n) / 1000;
}

function attributes(keyValues: Message[]): Attributes {
  const out: Attributes = Object.create(null);
  for (const keyValue of keyValues)
    out[keyValue.key ?? ''] = keyValue.value ? anyValue(keyValue.value) : null;
  return out;
}

function anyValue(value: Message): AttributeValue {
  switch (value.value) {
    case 'stringValue':
      return value.stringValue;
    case 'boolValue':
      return value.boolValue;
    case 'intValue': {
      const big = BigInt(value.intValue.toString());
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(big)
        : big;
    }
    case 'doubleValue':
      return value.doubleValue;
    case 'arrayValue':
      return (value.arrayValue.values as Message[]).map(anyValue);
    case 'kvlistValue':
      return attributes(value.kvlistValue.values);
    case 'bytesValue':
      return new Uint8Array(value.bytesValue);
    default:
      return null;
  }
}
