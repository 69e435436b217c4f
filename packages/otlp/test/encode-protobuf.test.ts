import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import { decodeTraces } from '../src/decode-protobuf.ts';
import { encodeTraces } from '../src/encode-protobuf.ts';
import type { Attributes, InstrumentationScope, Resource, Span } from '../src/span.ts';
import { referenceDecode } from './support/reference-decoder.ts';
import { sdkSpans } from './support/sdk-spans.ts';

const attributes = (values: Record<string, unknown>): Attributes =>
  Object.assign(Object.create(null), values);

function span(n: number, resource: Resource, scope: InstrumentationScope, extra: Partial<Span> = {}): Span {
  return {
    traceId: `0af7651916cd43dd8448eb211c8031${n.toString(16).padStart(2, '0')}`,
    spanId: `b7ad6b71692033${n.toString(16).padStart(2, '0')}`,
    parentSpanId: n % 2 ? '' : 'b7ad6b7169203300',
    name: `span ${n}`,
    kind: 2,
    startTimeUnixMillis: 1_700_000_000_123.456 + n,
    endTimeUnixMillis: 1_700_000_000_999.001 + n,
    status: { code: 0, message: '' },
    attributes: attributes({ n }),
    events: [],
    resource,
    scope,
    ...extra,
  };
}

describe('encodeTraces', () => {
  it('round-trips every attribute value kind through decodeTraces', () => {
    const resource: Resource = {
      attributes: attributes({ 'service.name': 'payments', pid: 4242, tags: ['a', 'b'] }),
    };
    const scope = { name: 'keyscope-simulator', version: '0.1.0' };
    const spans = [
      span(1, resource, scope, {
        kind: 3,
        status: { code: 2, message: 'timeout ⏱' },
        attributes: attributes({
          string: 'naïve ✓ 🚀',
          long: 'y'.repeat(70_000),
          empty: '',
          true: true,
          false: false,
          int: 42,
          negative: -42,
          zero: 0,
          maxSafe: Number.MAX_SAFE_INTEGER,
          minSafe: Number.MIN_SAFE_INTEGER,
          big: 2n ** 60n,
          minInt64: -(2n ** 63n),
          maxInt64: 2n ** 63n - 1n,
          double: 0.1,
          negativeZero: -0,
          huge: 1e300,
          nan: Number.NaN,
          infinity: Number.POSITIVE_INFINITY,
          bytes: Uint8Array.from([0, 255, 128]),
          noBytes: new Uint8Array(0),
          nothing: null,
          array: ['a', 1, 2.5, true, null, [1, [2]], attributes({ inner: 'kv' })],
          kvlist: attributes({ nested: attributes({ deeper: [attributes({})] }) }),
          __proto__: 'plain key',
        }),
        events: [
          {
            name: 'dedup.lookup',
            timeUnixMillis: 1_700_000_000_500.5,
            attributes: attributes({ hit: false }),
          },
          { name: '', timeUnixMillis: 0, attributes: attributes({}) },
        ],
      }),
      span(2, resource, scope),
    ];
    expect(decodeTraces(encodeTraces(spans))).toEqual(spans);
    expect(referenceDecode(encodeTraces(spans))).toEqual(spans);
  });

  it('groups spans by resource and scope identity in order of first appearance', () => {
    const a: Resource = { attributes: attributes({ 'service.name': 'a' }) };
    const b: Resource = { attributes: attributes({ 'service.name': 'b' }) };
    const http = { name: 'http', version: '1' };
    const db = { name: 'db', version: '2' };
    const input = [span(1, a, http), span(2, b, http), span(3, a, db), span(4, a, http), span(5, b, http)];
    const decoded = decodeTraces(encodeTraces(input));
    expect(decoded.map((s) => s.name)).toEqual(['span 1', 'span 4', 'span 3', 'span 2', 'span 5']);
    expect(decoded[0]!.resource).toBe(decoded[1]!.resource);
    expect(decoded[0]!.resource).toBe(decoded[2]!.resource);
    expect(decoded[0]!.scope).not.toBe(decoded[2]!.scope);
    expect(decoded[3]!.resource).not.toBe(decoded[0]!.resource);
    // The same scope object under two resources is one ScopeSpans in each.
    expect(decoded[3]!.scope).not.toBe(decoded[0]!.scope);
    expect(decoded[3]!.scope).toEqual(http);
  });

  it('re-encodes a decoded SDK batch to the same spans', () => {
    const decoded = decodeTraces(ProtobufTraceSerializer.serializeRequest(sdkSpans())!);
    expect(decodeTraces(encodeTraces(decoded))).toEqual(decoded);
  });

  it('keeps whole microseconds and rounds finer times to the nearest microsecond', () => {
    const resource: Resource = { attributes: attributes({}) };
    const scope = { name: '', version: '' };
    const exact = span(1, resource, scope, { startTimeUnixMillis: 1_700_000_000_000.001 });
    const fine = span(2, resource, scope, { startTimeUnixMillis: 1_700_000_000_000.0012 });
    const [first, second] = decodeTraces(encodeTraces([exact, fine]));
    expect(first!.startTimeUnixMillis).toBe(1_700_000_000_000.001);
    expect(second!.startTimeUnixMillis).toBe(1_700_000_000_000.001);
  });

  it('writes strings at the boundaries of its ASCII fast path and of one-byte lengths', () => {
    const resource: Resource = { attributes: attributes({}) };
    const scope = { name: '', version: '' };
    const values = [
      'a'.repeat(127),
      'a'.repeat(128),
      `${'a'.repeat(126)}é`,
      `é${'a'.repeat(40)}`,
      `${'a'.repeat(60)}\u{1F680}`,
    ];
    const input = [
      span(1, resource, scope, {
        attributes: attributes(Object.fromEntries(values.map((v, i) => [`k${i}`, v]))),
      }),
    ];
    const [decoded] = decodeTraces(encodeTraces(input));
    expect(Object.values(decoded!.attributes)).toEqual(values);
    expect(referenceDecode(encodeTraces(input))[0]!.attributes).toEqual(decoded!.attributes);
  });

  it('encodes no spans as an empty request', () => {
    expect(encodeTraces([])).toEqual(new Uint8Array(0));
  });

  it('refuses spans it cannot encode', () => {
    const resource: Resource = { attributes: attributes({}) };
    const scope = { name: '', version: '' };
    expect(() => encodeTraces([span(1, resource, scope, { traceId: 'abc' })])).toThrow(TypeError);
    expect(() => encodeTraces([span(1, resource, scope, { spanId: 'XXXXXXXXXXXXXXXX' })])).toThrow(TypeError);
    expect(() => encodeTraces([span(1, resource, scope, { startTimeUnixMillis: -1 })])).toThrow(RangeError);
    expect(() =>
      encodeTraces([span(1, resource, scope, { attributes: attributes({ big: 2n ** 64n }) })]),
    ).toThrow(RangeError);
  });
});
