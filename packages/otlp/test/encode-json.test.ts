import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import { decodeTracesJson } from '../src/decode-json.ts';
import { decodeTraces } from '../src/decode-protobuf.ts';
import { encodeTracesJson } from '../src/encode-json.ts';
import { encodeTraces } from '../src/encode-protobuf.ts';
import type { Attributes, Resource, Span } from '../src/span.ts';
import { sdkSpans } from './support/sdk-spans.ts';

const attributes = (values: Record<string, unknown>): Attributes =>
  Object.assign(Object.create(null), values);

describe('encodeTracesJson', () => {
  const resource: Resource = { attributes: attributes({ 'service.name': 'payments' }) };
  const scope = { name: 'simulator', version: '1' };
  const spans: Span[] = [
    {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      parentSpanId: 'b7ad6b7169203330',
      name: 'POST /payments',
      kind: 2,
      startTimeUnixMillis: 1_700_000_000_123.456,
      endTimeUnixMillis: 1_700_000_000_999.999,
      status: { code: 2, message: 'boom' },
      attributes: attributes({
        key: 'k1',
        int: 7,
        big: -(2n ** 63n),
        double: 2.5,
        nan: Number.NaN,
        infinity: Number.NEGATIVE_INFINITY,
        negativeZero: -0,
        bool: true,
        bytes: Uint8Array.from([251, 255]),
        nothing: null,
        list: [1, 'two', [3]],
        map: attributes({ a: attributes({ b: null }) }),
      }),
      events: [{ name: 'e', timeUnixMillis: 1_700_000_000_500.25, attributes: attributes({ n: 1 }) }],
      resource,
      scope,
    },
  ];

  it('round-trips through JSON.stringify and decodeTracesJson', () => {
    expect(decodeTracesJson(JSON.stringify(encodeTracesJson(spans)))).toEqual(spans);
  });

  it('writes what the protobuf encoder writes, in the OTLP JSON mapping', () => {
    const body = encodeTracesJson(spans) as {
      resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[];
    };
    const span = body.resourceSpans[0]!.scopeSpans[0]!.spans[0]!;
    expect(span.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(span.startTimeUnixNano).toBe('1700000000123456000');
    expect(span.kind).toBe(2);
    expect(decodeTracesJson(JSON.stringify(body))).toEqual(decodeTraces(encodeTraces(spans)));
  });

  it('matches the official JSON exporter field for field on SDK spans', () => {
    const official = JsonTraceSerializer.serializeRequest(sdkSpans())!;
    const decoded = decodeTracesJson(official);
    expect(decodeTracesJson(JSON.stringify(encodeTracesJson(decoded)))).toEqual(decoded);
  });
});
