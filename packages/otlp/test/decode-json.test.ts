import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import { decodeTracesJson } from '../src/decode-json.ts';
import { decodeTraces } from '../src/decode-protobuf.ts';
import {
  OTLP_ID_LENGTH,
  OTLP_ID_ZERO,
  OTLP_JSON,
  OTLP_NESTING,
  OTLP_TIME_RANGE,
  OTLP_UTF8,
} from '../src/errors.ts';
import { expectCode } from './support/expect-code.ts';
import { referenceDecode } from './support/reference-decoder.ts';
import { sdkSpans } from './support/sdk-spans.ts';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';

/** A one-span OTLP/JSON request; `span` overrides the span's fields. */
function request(span: Record<string, unknown> = {}, resource: object = { attributes: [] }): object {
  return {
    resourceSpans: [
      {
        resource,
        scopeSpans: [
          {
            scope: { name: 'scope', version: '1' },
            spans: [
              {
                traceId: TRACE_ID,
                spanId: SPAN_ID,
                name: 'span',
                kind: 2,
                startTimeUnixNano: '1700000000123456789',
                endTimeUnixNano: '1700000001000000000',
                ...span,
              },
            ],
          },
        ],
      },
    ],
  };
}

const decodeOne = (body: object) => decodeTracesJson(JSON.stringify(body))[0]!;
const attribute = (value: object) => decodeOne(request({ attributes: [{ key: 'a', value }] })).attributes.a;

function snakeCase(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeCase);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
      snakeCase(inner),
    ]),
  );
}

describe('decodeTracesJson', () => {
  const spans = sdkSpans();
  const json = JsonTraceSerializer.serializeRequest(spans)!;
  const protobuf = ProtobufTraceSerializer.serializeRequest(spans)!;

  it('decodes what the official JSON exporter sends to the same spans as its protobuf form', () => {
    const decoded = decodeTracesJson(json);
    expect(decoded).toHaveLength(8);
    expect(decoded).toEqual(decodeTraces(protobuf));
    expect(decoded).toEqual(referenceDecode(protobuf));
  });

  it('accepts the payload as a string or as UTF-8 bytes with or without a byte order mark', () => {
    const text = new TextDecoder().decode(json);
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...json]);
    expect(decodeTracesJson(text)).toEqual(decodeTracesJson(json));
    expect(decodeTracesJson(withBom)).toEqual(decodeTracesJson(json));
  });

  it('accepts snake_case field names as protobuf JSON parsers do', () => {
    const body = snakeCase(JSON.parse(new TextDecoder().decode(json)));
    expect(JSON.stringify(body)).toContain('"resource_spans"');
    expect(decodeTracesJson(JSON.stringify(body))).toEqual(decodeTracesJson(json));
  });

  it('shares one resource object per resourceSpans entry and one scope object per scopeSpans entry', () => {
    const decoded = decodeTracesJson(json);
    const payments = decoded.filter((span) => span.resource.attributes['service.name'] === 'payments');
    expect(new Set(payments.map((span) => span.resource)).size).toBe(1);
    const http = payments.filter((span) => span.scope.name === '@opentelemetry/instrumentation-http');
    expect(new Set(http.map((span) => span.scope)).size).toBe(1);
  });

  it('accepts enum names and integers for kind and status code', () => {
    const span = decodeOne(
      request({ kind: 'SPAN_KIND_CLIENT', status: { code: 'STATUS_CODE_ERROR', message: 'boom' } }),
    );
    expect(span.kind).toBe(3);
    expect(span.status).toEqual({ code: 2, message: 'boom' });
    expect(decodeOne(request({ kind: 5, status: { code: 1 } }))).toMatchObject({
      kind: 5,
      status: { code: 1 },
    });
    expect(decodeOne(request({ kind: 17, status: { code: 9 } }))).toMatchObject({
      kind: 0,
      status: { code: 0 },
    });
  });

  it('reads int64 fields from decimal strings and from numbers', () => {
    expect(attribute({ intValue: '42' })).toBe(42);
    expect(attribute({ intValue: 42 })).toBe(42);
    expect(attribute({ intValue: '-9223372036854775808' })).toBe(-(2n ** 63n));
    expect(attribute({ intValue: '9223372036854775807' })).toBe(2n ** 63n - 1n);
    expect(attribute({ intValue: '9007199254740991' })).toBe(Number.MAX_SAFE_INTEGER);
    expect(attribute({ intValue: '-0' })).toBe(0);
    const span = decodeOne(request({ startTimeUnixNano: 1_700_000_000_000_000, endTimeUnixNano: '999' }));
    expect(span.startTimeUnixMillis).toBe(1_700_000_000);
    expect(span.endTimeUnixMillis).toBe(0);
  });

  it('gives protobuf-equal times for the same nanoseconds', () => {
    const span = decodeOne(request({ startTimeUnixNano: '1700000000123456789' }));
    expect(span.startTimeUnixMillis).toBe(1_700_000_000_123.456);
  });

  it('reads doubles, including the string forms of NaN and the infinities', () => {
    expect(attribute({ doubleValue: 1.5 })).toBe(1.5);
    expect(attribute({ doubleValue: '2.5e3' })).toBe(2500);
    expect(attribute({ doubleValue: 'NaN' })).toBeNaN();
    expect(attribute({ doubleValue: 'Infinity' })).toBe(Number.POSITIVE_INFINITY);
    expect(attribute({ doubleValue: '-Infinity' })).toBe(Number.NEGATIVE_INFINITY);
  });

  it('reads bytes from standard and URL-safe base64, padded or not', () => {
    const expected = Uint8Array.from([0xfb, 0xff, 0x01]);
    expect(attribute({ bytesValue: '+/8B' })).toEqual(expected);
    expect(attribute({ bytesValue: '-_8B' })).toEqual(expected);
    expect(attribute({ bytesValue: 'AQ==' })).toEqual(Uint8Array.from([1]));
    expect(attribute({ bytesValue: 'AQ' })).toEqual(Uint8Array.from([1]));
    expect((attribute({ bytesValue: 'AQ' }) as Uint8Array).constructor).toBe(Uint8Array);
  });

  it('reads nested arrays and kvlists, and empty values as null', () => {
    expect(
      attribute({
        kvlistValue: {
          values: [
            {
              key: 'list',
              value: { arrayValue: { values: [{ stringValue: 'x' }, {}, { boolValue: true }] } },
            },
            { key: 'none' },
            { key: 'null', value: null },
          ],
        },
      }),
    ).toEqual({ list: ['x', null, true], none: null, null: null });
    expect(attribute({})).toBeNull();
    expect(attribute({ arrayValue: {} })).toEqual([]);
  });

  it('lowercases uppercase hex ids and reads an empty or all-zero parent as a root', () => {
    const span = decodeOne(request({ traceId: TRACE_ID.toUpperCase(), parentSpanId: 'B7AD6B7169203332' }));
    expect(span.traceId).toBe(TRACE_ID);
    expect(span.parentSpanId).toBe('b7ad6b7169203332');
    expect(decodeOne(request({ parentSpanId: '' })).parentSpanId).toBe('');
    expect(decodeOne(request({ parentSpanId: '0000000000000000' })).parentSpanId).toBe('');
  });

  it('ignores unknown fields and treats null as not set', () => {
    const span = decodeOne({
      futureField: { anything: [1, 2] },
      ...request({ flags: 257, links: [{ traceId: 'zz' }], traceState: 'a=b', status: null, events: null }),
    });
    expect(span.status).toEqual({ code: 0, message: '' });
    expect(span.events).toEqual([]);
  });

  it('applies the attribute sets and the events switch like the protobuf decoder', () => {
    const options = {
      spanAttributes: new Set(['idempotency.key']),
      resourceAttributes: new Set(['service.name', 'cloud.region']),
      events: false,
    };
    expect(decodeTracesJson(json, options)).toEqual(decodeTraces(protobuf, options));
  });

  describe('refuses malformed payloads', () => {
    it('refuses text that is not JSON', () => {
      expectCode(() => decodeTracesJson('{"resourceSpans": ['), OTLP_JSON);
      expectCode(() => decodeTracesJson(''), OTLP_JSON);
    });

    it('refuses bytes that are not UTF-8', () => {
      expectCode(() => decodeTracesJson(Uint8Array.from([0x7b, 0xff, 0x7d])), OTLP_UTF8);
    });

    it('refuses fields of the wrong JSON type', () => {
      expectCode(() => decodeTracesJson('[]'), OTLP_JSON);
      expectCode(() => decodeTracesJson('{"resourceSpans": {}}'), OTLP_JSON);
      expectCode(() => decodeOne(request({ name: 5 })), OTLP_JSON);
      expectCode(() => decodeOne(request({ traceId: 12 })), OTLP_JSON);
      expectCode(() => decodeOne(request({ attributes: {} })), OTLP_JSON);
      expectCode(() => decodeOne(request({ attributes: [{ key: 1, value: {} }] })), OTLP_JSON);
      expectCode(() => attribute({ boolValue: 'true' }), OTLP_JSON);
      expectCode(() => attribute({ stringValue: 1 }), OTLP_JSON);
      expectCode(() => attribute({ arrayValue: [] }), OTLP_JSON);
    });

    it('refuses unparseable values', () => {
      expectCode(() => attribute({ intValue: '12a' }), OTLP_JSON);
      expectCode(() => attribute({ intValue: 1.5 }), OTLP_JSON);
      expectCode(() => attribute({ intValue: '9223372036854775808' }), OTLP_JSON);
      expectCode(() => attribute({ doubleValue: 'fast' }), OTLP_JSON);
      expectCode(() => attribute({ bytesValue: 'not base64!' }), OTLP_JSON);
      expectCode(() => attribute({ bytesValue: 'A' }), OTLP_JSON);
      expectCode(() => decodeOne(request({ kind: 'SERVER' })), OTLP_JSON);
      expectCode(() => decodeOne(request({ kind: 2.5 })), OTLP_JSON);
      expectCode(() => decodeOne(request({ startTimeUnixNano: '-5' })), OTLP_JSON);
      expectCode(() => decodeOne(request({ startTimeUnixNano: '1.5e18' })), OTLP_JSON);
      expectCode(() => decodeOne(request({ traceId: 'zz'.repeat(16) })), OTLP_JSON);
    });

    it('refuses times past the unsigned 64-bit nanoseconds OTLP carries, with their own code', () => {
      for (const startTimeUnixNano of [
        '18446744073709551616',
        '99999999999999999999',
        '1'.repeat(21),
        1e300,
        2 ** 64,
        -1,
      ]) {
        expectCode(() => decodeOne(request({ startTimeUnixNano })), OTLP_TIME_RANGE);
      }
      expectCode(() => decodeOne(request({ endTimeUnixNano: '99999999999999999999' })), OTLP_TIME_RANGE);
    });

    it('reads the largest fixed64 and leading zeros as times, for the time window to judge', () => {
      const span = decodeOne(
        request({ startTimeUnixNano: '18446744073709551615', endTimeUnixNano: '0001700000000123456789' }),
      );
      expect(span.startTimeUnixMillis).toBe(18_446_744_073_709.551);
      expect(span.endTimeUnixMillis).toBe(1_700_000_000_123.456);
    });

    it('refuses ids of the wrong length, missing ids and all-zero ids', () => {
      expectCode(() => decodeOne(request({ traceId: 'abc' })), OTLP_ID_LENGTH);
      expectCode(() => decodeOne(request({ traceId: undefined })), OTLP_ID_LENGTH);
      expectCode(() => decodeOne(request({ spanId: '' })), OTLP_ID_LENGTH);
      expectCode(() => decodeOne(request({ spanId: `${SPAN_ID}00` })), OTLP_ID_LENGTH);
      expectCode(() => decodeOne(request({ parentSpanId: 'b7ad' })), OTLP_ID_LENGTH);
      expectCode(() => decodeOne(request({ traceId: '0'.repeat(32) })), OTLP_ID_ZERO);
      expectCode(() => decodeOne(request({ spanId: '0'.repeat(16) })), OTLP_ID_ZERO);
    });

    it('refuses values nested deeper than maxDepth', () => {
      let value: object = { intValue: 1 };
      for (let i = 0; i < 40; i++) value = { arrayValue: { values: [value] } };
      expectCode(() => attribute(value), OTLP_NESTING);
      const body = JSON.stringify(request({ attributes: [{ key: 'a', value }] }));
      expect(decodeTracesJson(body, { maxDepth: 40 })).toHaveLength(1);
    });

    it('refuses absurdly deep JSON without overflowing the stack', () => {
      const depth = 200_000;
      const body = `{"resourceSpans":[${'['.repeat(depth)}${']'.repeat(depth)}]}`;
      expectCode(() => decodeTracesJson(body), OTLP_JSON);
    });
  });
});
