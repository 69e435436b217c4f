import { isKeyscopeError } from '@keyscope/errors';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { describe, expect, it } from 'vitest';
import { decodeTraceRequestJson, decodeTracesJson } from '../src/decode-json.ts';
import { createTracesDecoder, decodeTraceRequest, decodeTraces } from '../src/decode-protobuf.ts';
import { encodeTracesJson } from '../src/encode-json.ts';
import { OTLP_ID_ZERO, OTLP_JSON, OTLP_NESTING } from '../src/errors.ts';
import { officialEncode, referenceDecode } from './support/reference-decoder.ts';
import { sdkSpans } from './support/sdk-spans.ts';
import * as wire from './support/wire.ts';

const traceId = (n: number) => Uint8Array.from(Buffer.from(n.toString(16).padStart(32, '0'), 'hex'));
const spanId = (n: number) => Uint8Array.from(Buffer.from(n.toString(16).padStart(16, '0'), 'hex'));
const hex16 = (n: number) => n.toString(16).padStart(16, '0');
const nanos = (n: bigint) => ({
  low: Number(n & 0xffffffffn) | 0,
  high: Number(n >> 32n) | 0,
  unsigned: true,
});

/** A one-span request whose span carries `attributes` (protobufjs fromObject form). */
function requestWithAttributes(attributes: object[]): object {
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'payments' } }] },
        scopeSpans: [
          {
            scope: { name: 'scope', version: '1' },
            spans: [
              {
                traceId: traceId(1),
                spanId: spanId(1),
                name: 'span',
                kind: 2,
                startTimeUnixNano: nanos(1_700_000_000_123_456_789n),
                endTimeUnixNano: nanos(1_700_000_001_000_000_000n),
                attributes,
              },
            ],
          },
        ],
      },
    ],
  };
}

function payloadOf(spans: ReturnType<typeof sdkSpans>): Uint8Array {
  return ProtobufTraceSerializer.serializeRequest(spans)!;
}

/** The ResourceSpans bytes of a request holding exactly one (its tag and length removed). */
function withoutRequestFraming(request: Uint8Array): Uint8Array {
  let at = 1;
  while (request[at]! & 0x80) at++;
  return request.subarray(at + 1);
}

function varint(value: number): Uint8Array {
  const bytes: number[] = [];
  while (value >= 0x80) {
    bytes.push((value & 0x7f) | 0x80);
    value >>>= 7;
  }
  bytes.push(value);
  return Uint8Array.from(bytes);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  return Uint8Array.from(parts.flatMap((part) => [...part]));
}

describe('decodeTraces', () => {
  it('decodes what the official OpenTelemetry JS exporter sends exactly as the official protos do', () => {
    const bytes = ProtobufTraceSerializer.serializeRequest(sdkSpans())!;
    const spans = decodeTraces(bytes);
    expect(spans).toHaveLength(8);
    expect(spans).toEqual(referenceDecode(bytes));
  });

  it('keeps every SDK attribute kind with its value', () => {
    const spans = decodeTraces(ProtobufTraceSerializer.serializeRequest(sdkSpans())!);
    const server = spans.find((span) => span.name === 'POST /api/v1/payments')!;
    expect(server.kind).toBe(2);
    expect(server.attributes['http.response.status_code']).toBe(201);
    expect(server.attributes['payment.count.negative']).toBe(-42);
    expect(server.attributes['payment.count.huge']).toBe(2n ** 60n);
    expect(server.attributes['payment.count.min']).toBe(-(2n ** 63n));
    expect(server.attributes['payment.count.unsafe']).toBe(2n ** 53n + 2n);
    expect(server.attributes['payment.amount']).toBe(1999.95);
    expect(server.attributes['idempotency.hit']).toBe(false);
    expect(server.attributes['sparse.values']).toEqual(['a', null, 'c']);
    expect(server.attributes['empty.array']).toEqual([]);
    expect(server.attributes['unicode.value']).toBe('naïve café ✓ 🚀');
    expect(server.startTimeUnixMillis).toBe(1_700_000_000_123.456);
    expect(server.events.map((event) => event.name)).toEqual(['dedup.lookup', 'no.attributes']);
    expect(server.parentSpanId).toBe('');
    const client = spans.find((span) => span.name === 'POST ledger')!;
    expect(client.parentSpanId).toBe(server.spanId);
    expect(client.status).toEqual({ code: 2, message: 'upstream timed out ⏱' });
  });

  it('shares one resource object per ResourceSpans and one scope object per ScopeSpans', () => {
    const spans = decodeTraces(ProtobufTraceSerializer.serializeRequest(sdkSpans())!);
    const payments = spans.filter((span) => span.resource.attributes['service.name'] === 'payments');
    const ledger = spans.filter((span) => span.resource.attributes['service.name'] === 'ledger');
    expect(new Set(payments.map((span) => span.resource)).size).toBe(1);
    expect(new Set(ledger.map((span) => span.resource)).size).toBe(1);
    expect(payments[0]!.resource).not.toBe(ledger[0]!.resource);
    const http = payments.filter((span) => span.scope.name === '@opentelemetry/instrumentation-http');
    expect(new Set(http.map((span) => span.scope)).size).toBe(1);
    expect(http[0]!.scope).toEqual({ name: '@opentelemetry/instrumentation-http', version: '0.223.0' });
  });

  it('decodes scope names and versions of every length, met again in later requests', () => {
    const names = [
      's',
      'io.opentelemetry.instrumentation.http',
      'scope-'.repeat(20),
      'é-'.repeat(40),
      'x'.repeat(300),
    ];
    const request = (round: number) => {
      const body = requestWithAttributes([]) as {
        resourceSpans: { scopeSpans: { scope: object; spans: object[] }[] }[];
      };
      const [only] = body.resourceSpans[0]!.scopeSpans;
      body.resourceSpans[0]!.scopeSpans = names.map((name, i) => ({
        scope: { name, version: `${round}.${i}.0-${'rc'.repeat(i * 10)}` },
        spans: only!.spans,
      }));
      return officialEncode(body);
    };
    for (let round = 0; round < 3; round++) {
      const scopes = decodeTraces(Buffer.from(request(round))).map((span) => span.scope);
      expect(scopes).toEqual(
        names.map((name, i) => ({ name, version: `${round}.${i}.0-${'rc'.repeat(i * 10)}` })),
      );
    }
  });

  it('decodes a resource seen in an earlier request into the same frozen object, per attribute filter', () => {
    const filter = { resourceAttributes: new Set(['service.name']) };
    const first = decodeTraces(payloadOf(sdkSpans()), filter);
    const again = decodeTraces(payloadOf(sdkSpans()), filter);
    expect(again[0]!.resource).toBe(first[0]!.resource);
    expect(Object.isFrozen(again[0]!.resource.attributes)).toBe(true);
    expect(() => {
      (again[0]!.resource.attributes as Record<string, unknown>)['service.name'] = 'changed';
    }).toThrow(TypeError);
    const unfiltered = decodeTraces(payloadOf(sdkSpans()));
    expect(unfiltered[0]!.resource).not.toBe(first[0]!.resource);
    expect(Object.keys(unfiltered[0]!.resource.attributes).length).toBeGreaterThan(1);
  });

  it('merges a resource written in two parts and gives it to spans that precede it', () => {
    const part = (request: object) => withoutRequestFraming(officialEncode(request));
    const spans = requestWithAttributes([]) as { resourceSpans: { scopeSpans: object }[] };
    const scopeSpansOnly = part({ resourceSpans: [{ scopeSpans: spans.resourceSpans[0]!.scopeSpans }] });
    const resource = (key: string, value: string) =>
      part({ resourceSpans: [{ resource: { attributes: [{ key, value: { stringValue: value } }] } }] });
    const merged = concat(
      scopeSpansOnly,
      resource('service.name', 'payments'),
      resource('host.name', 'node-1'),
    );
    const decoded = decodeTraces(concat(Uint8Array.of(0x0a), varint(merged.length), merged));
    expect(decoded).toHaveLength(1);
    expect(decoded[0]!.resource.attributes).toEqual({ 'service.name': 'payments', 'host.name': 'node-1' });
    const after = concat(scopeSpansOnly, resource('service.name', 'payments'));
    expect(
      decodeTraces(concat(Uint8Array.of(0x0a), varint(after.length), after))[0]!.resource.attributes,
    ).toEqual({
      'service.name': 'payments',
    });
  });

  it('decodes AnyValue kinds the SDK cannot produce: kvlists, bytes, nested arrays, int64 extremes, empty values', () => {
    const bytes = officialEncode(
      requestWithAttributes([
        {
          key: 'nested',
          value: {
            kvlistValue: {
              values: [
                { key: 'bytes', value: { bytesValue: Uint8Array.from([0, 1, 254, 255]) } },
                {
                  key: 'matrix',
                  value: {
                    arrayValue: {
                      values: [
                        { arrayValue: { values: [{ intValue: 1 }, { doubleValue: 2.5 }] } },
                        { arrayValue: { values: [] } },
                        { kvlistValue: { values: [{ key: 'deep', value: { boolValue: true } }] } },
                      ],
                    },
                  },
                },
                { key: 'empty', value: {} },
                { key: 'missing' },
              ],
            },
          },
        },
        { key: 'max', value: { intValue: '9223372036854775807' } },
        { key: 'min', value: { intValue: '-9223372036854775808' } },
        { key: 'max.safe', value: { intValue: String(Number.MAX_SAFE_INTEGER) } },
        { key: 'min.safe', value: { intValue: String(Number.MIN_SAFE_INTEGER) } },
        { key: 'past.safe', value: { intValue: '9007199254740992' } },
        { key: 'below.safe', value: { intValue: '-9007199254740992' } },
        { key: 'minus.one', value: { intValue: -1 } },
        { key: 'nan', value: { doubleValue: Number.NaN } },
        { key: 'infinity', value: { doubleValue: Number.NEGATIVE_INFINITY } },
        { key: 'empty.bytes', value: { bytesValue: new Uint8Array(0) } },
        { key: '__proto__', value: { stringValue: 'an ordinary key' } },
        { key: '', value: { stringValue: 'an empty key is kept' } },
      ]),
    );
    const [span] = decodeTraces(bytes);
    expect([span]).toEqual(referenceDecode(bytes));
    const attributes = span!.attributes;
    expect(attributes.max).toBe(2n ** 63n - 1n);
    expect(attributes.min).toBe(-(2n ** 63n));
    expect(attributes['max.safe']).toBe(Number.MAX_SAFE_INTEGER);
    expect(attributes['min.safe']).toBe(Number.MIN_SAFE_INTEGER);
    expect(attributes['past.safe']).toBe(2n ** 53n);
    expect(attributes['below.safe']).toBe(-(2n ** 53n));
    expect(attributes['minus.one']).toBe(-1);
    expect(attributes.nan).toBeNaN();
    expect(attributes.nested).toEqual({
      bytes: Uint8Array.from([0, 1, 254, 255]),
      matrix: [[1, 2.5], [], { deep: true }],
      empty: null,
      missing: null,
    });
    for (const object of [attributes, attributes.nested as object, span!.resource.attributes]) {
      expect(Object.prototype.isPrototypeOf.call(Object.prototype, object)).toBe(false);
      expect('toString' in object).toBe(false);
    }
    expect(Object.hasOwn(attributes, '__proto__')).toBe(true);
    const protoKey = '__proto__';
    expect(attributes[protoKey]).toBe('an ordinary key');
    expect(attributes['']).toBe('an empty key is kept');
  });

  it('returns byte values that do not alias the payload', () => {
    const bytes = officialEncode(
      requestWithAttributes([{ key: 'b', value: { bytesValue: Uint8Array.from([7, 8]) } }]),
    );
    const value = decodeTraces(bytes)[0]!.attributes.b as Uint8Array;
    bytes.fill(0);
    expect(value).toEqual(Uint8Array.from([7, 8]));
    expect(value.constructor).toBe(Uint8Array);
  });

  it('accepts a Buffer that is a view into a larger pool', () => {
    const payload = ProtobufTraceSerializer.serializeRequest(sdkSpans())!;
    const pool = Buffer.alloc(payload.length + 100, 0xff);
    pool.set(payload, 37);
    const view = pool.subarray(37, 37 + payload.length);
    expect(decodeTraces(view)).toEqual(referenceDecode(payload));
  });

  it('decodes an empty payload as no spans', () => {
    expect(decodeTraces(new Uint8Array(0))).toEqual([]);
  });

  it('truncates times to whole microseconds', () => {
    const bytes = officialEncode(requestWithAttributes([]));
    const [span] = decodeTraces(bytes);
    expect(span!.startTimeUnixMillis).toBe(1_700_000_000_123.456);
    expect(span!.endTimeUnixMillis).toBe(1_700_000_001_000);
  });

  it('maps kinds and status codes outside the known values to UNSPECIFIED and UNSET', () => {
    const request = requestWithAttributes([]) as { resourceSpans: { scopeSpans: { spans: object[] }[] }[] };
    const span = request.resourceSpans[0]!.scopeSpans[0]!.spans[0]! as Record<string, unknown>;
    span.kind = 9;
    span.status = { code: 7, message: 'from the future' };
    const [decoded] = decodeTraces(officialEncode(request));
    expect(decoded!.kind).toBe(0);
    expect(decoded!.status).toEqual({ code: 0, message: 'from the future' });
    span.kind = -1; // an int32 enum written as a 10-byte varint
    expect(decodeTraces(officialEncode(request))[0]!.kind).toBe(0);
  });

  it('reads an all-zero parent span id as a root span', () => {
    const request = requestWithAttributes([]) as { resourceSpans: { scopeSpans: { spans: object[] }[] }[] };
    (request.resourceSpans[0]!.scopeSpans[0]!.spans[0] as Record<string, unknown>).parentSpanId =
      new Uint8Array(8);
    expect(decodeTraces(officialEncode(request))[0]!.parentSpanId).toBe('');
  });

  describe('options', () => {
    const payload = ProtobufTraceSerializer.serializeRequest(sdkSpans())!;

    it('materializes only the span and resource attributes named in the sets', () => {
      const spans = decodeTraces(payload, {
        spanAttributes: new Set(['idempotency.key', 'absent.key']),
        resourceAttributes: new Set(['service.name']),
      });
      const server = spans.find((span) => span.name === 'POST /api/v1/payments')!;
      expect(server.attributes).toEqual({ 'idempotency.key': 'key-0001' });
      expect(server.resource.attributes).toEqual({ 'service.name': 'payments' });
      expect(server.events[0]!.attributes).toEqual({ 'cache.hit': false, 'lookup.micros': 812 });
      const full = decodeTraces(payload);
      expect(spans.map(({ attributes, resource, ...rest }) => rest)).toEqual(
        full.map(({ attributes, resource, ...rest }) => rest),
      );
    });

    it('gives spans that keep nothing under a filter shared, frozen empties', () => {
      const spans = decodeTraces(payload, { spanAttributes: new Set(['absent.key']), events: false });
      expect(spans[0]!.attributes).toEqual({});
      expect(spans[0]!.attributes).toBe(spans[1]!.attributes);
      expect(Object.isFrozen(spans[0]!.attributes)).toBe(true);
      expect(Object.isFrozen(spans[0]!.events)).toBe(true);
      const unset = spans.filter((span) => span.status.code === 0);
      expect(unset.length).toBeGreaterThan(1);
      expect(unset[0]!.status).toBe(unset[1]!.status);
      expect(Object.isFrozen(unset[0]!.status)).toBe(true);
    });

    it('reads a KeyValue with its value first or its key written twice as protobuf does (the last key wins)', () => {
      const text = (value: string) => [...Buffer.from(value)];
      const field = (tag: number, content: number[]) => [tag, content.length, ...content];
      const stringValue = field(0x12, field(0x0a, text('v')));
      const valueFirst = [...stringValue, ...field(0x0a, text('wanted'))];
      const keyTwice = [...field(0x0a, text('other')), ...field(0x0a, text('wanted')), ...stringValue];
      for (const keyValue of [valueFirst, keyTwice]) {
        const span = [
          ...field(0x0a, [...traceId(1)]),
          ...field(0x12, [...spanId(1)]),
          ...field(0x4a, keyValue),
        ];
        const resourceSpans = field(0x12, field(0x12, span));
        const bytes = Uint8Array.from(field(0x0a, resourceSpans));
        expect(decodeTraces(bytes, { spanAttributes: new Set(['wanted']) })[0]!.attributes).toEqual({
          wanted: 'v',
        });
        expect(decodeTraces(bytes, { spanAttributes: new Set(['other']) })[0]!.attributes).toEqual({});
      }
    });

    it('skips events when events is false', () => {
      const spans = decodeTraces(payload, { events: false });
      expect(spans.every((span) => span.events.length === 0)).toBe(true);
      expect(spans.map((span) => span.spanId)).toEqual(decodeTraces(payload).map((span) => span.spanId));
    });

    it('does not decode skipped attribute values, so a bad value under an unwanted key passes', () => {
      const nested = (depth: number): object =>
        depth === 0 ? { stringValue: 'leaf' } : { arrayValue: { values: [nested(depth - 1)] } };
      const bytes = officialEncode(
        requestWithAttributes([
          { key: 'deep', value: nested(40) },
          { key: 'wanted', value: { intValue: 5 } },
        ]),
      );
      expect(() => decodeTraces(bytes)).toThrowError(expect.objectContaining({ code: OTLP_NESTING.code }));
      expect(decodeTraces(bytes, { spanAttributes: new Set(['wanted']) })[0]!.attributes).toEqual({
        wanted: 5,
      });
    });

    it('matches non-ASCII keys and skips unwanted keys without decoding them', () => {
      const bytes = officialEncode(
        requestWithAttributes([
          { key: 'ünï.cödé', value: { stringValue: '✓' } },
          { key: 'other', value: { stringValue: 'x' } },
        ]),
      );
      expect(decodeTraces(bytes, { spanAttributes: new Set(['ünï.cödé']) })[0]!.attributes).toEqual({
        'ünï.cödé': '✓',
      });
      expect(decodeTraces(bytes, { spanAttributes: new Set() })[0]!.attributes).toEqual({});
    });

    it('enforces maxDepth on nested arrays and kvlists', () => {
      const nested = (depth: number): object =>
        depth === 0 ? { intValue: 1 } : { kvlistValue: { values: [{ key: 'k', value: nested(depth - 1) }] } };
      const bytes = officialEncode(requestWithAttributes([{ key: 'v', value: nested(3) }]));
      expect(decodeTraces(bytes, { maxDepth: 3 })[0]!.attributes.v).toEqual({ k: { k: { k: 1 } } });
      let error: unknown;
      try {
        decodeTraces(bytes, { maxDepth: 2 });
      } catch (caught) {
        error = caught;
      }
      expect(isKeyscopeError(error) && error.code).toBe(OTLP_NESTING.code);
    });

    describe('a keyed selection', () => {
      const selection = {
        keys: new Set(['idempotency.key']),
        always: new Set(['http.response.status_code']),
        whenKeyed: new Set(['http.route', 'server.address']),
      };
      const text = (stringValue: string) => ({ stringValue });
      const route = (value: string) => ({ key: 'http.route', value: text(value) });
      const status = { key: 'http.response.status_code', value: { intValue: 503 } };
      const key = { key: 'idempotency.key', value: text('k-1') };
      const other = { key: 'url.path', value: text('/pay') };
      const span = (n: number, attributes: object[]) => ({
        traceId: traceId(1),
        spanId: spanId(n),
        name: `span ${n}`,
        kind: 2,
        startTimeUnixNano: nanos(1_700_000_000_000_000_000n),
        endTimeUnixNano: nanos(1_700_000_001_000_000_000n),
        attributes,
      });
      const resourceSpans = (resourceAttributes: object[], spans: object[]) => ({
        resource: { attributes: [{ key: 'service.name', value: text('payments') }, ...resourceAttributes] },
        scopeSpans: [{ scope: { name: 'scope', version: '1' }, spans }],
      });
      const bytes = officialEncode({
        resourceSpans: [
          resourceSpans(
            [],
            [
              span(1, [route('/pay'), status, other, key]),
              span(2, [route('/pay'), status, other]),
              span(3, [route('/first'), key, route('/last'), { key: 'server.address', value: text('db') }]),
            ],
          ),
          resourceSpans([key], [span(4, [route('/refund')])]),
        ],
      });
      const options = { spanAttributes: selection, resourceAttributes: new Set(['idempotency.key']) };

      it('decodes keys through their own cache exactly, in strings and arrays, more keys than it holds', () => {
        // Keys' values go through a cache of their own (4,096 slots): 6,000 distinct UUIDs, twice,
        // as a string and in an array (an HTTP header), so slots are reused and keys collide.
        const uuids = Array.from(
          { length: 6_000 },
          (_, i) => `3f2b8c1e-9a4d-4e7b-b6c2-${i.toString(16).padStart(12, '0')}`,
        );
        const payload = (form: 'string' | 'array') =>
          officialEncode({
            resourceSpans: [
              resourceSpans(
                [],
                uuids.map((uuid, i) =>
                  span(i + 1, [
                    form === 'string'
                      ? { key: 'idempotency.key', value: text(uuid) }
                      : {
                          key: 'http.request.header.idempotency-key',
                          value: { arrayValue: { values: [text(uuid)] } },
                        },
                  ]),
                ),
              ),
            ],
          });
        const headers = {
          ...options,
          spanAttributes: {
            ...selection,
            keys: new Set(['idempotency.key', 'http.request.header.idempotency-key']),
          },
        };
        for (let round = 0; round < 2; round++) {
          const asStrings = decodeTraces(payload('string'), headers).map(
            (s) => s.attributes['idempotency.key'],
          );
          expect(asStrings).toEqual(uuids);
          const asArrays = decodeTraces(payload('array'), headers).map(
            (s) => (s.attributes['http.request.header.idempotency-key'] as string[])[0],
          );
          expect(asArrays).toEqual(uuids);
        }
      });

      it('keeps whenKeyed attributes only on spans that carry a key, wherever the key comes', () => {
        const spans = decodeTraces(bytes, options);
        expect(spans.map((decoded) => decoded.attributes)).toEqual([
          { 'http.route': '/pay', 'http.response.status_code': 503, 'idempotency.key': 'k-1' },
          { 'http.response.status_code': 503 },
          { 'http.route': '/last', 'idempotency.key': 'k-1', 'server.address': 'db' },
          { 'http.route': '/refund' },
        ]);
      });

      it('does not decode whenKeyed values on spans without a key', () => {
        const nested = (depth: number): object =>
          depth === 0 ? { stringValue: 'leaf' } : { arrayValue: { values: [nested(depth - 1)] } };
        const deep = officialEncode(
          requestWithAttributes([{ key: 'http.route', value: nested(40) }, status]),
        );
        expect(decodeTraces(deep, options)[0]!.attributes).toEqual({ 'http.response.status_code': 503 });
        const keyed = officialEncode(requestWithAttributes([{ key: 'http.route', value: nested(40) }, key]));
        expect(() => decodeTraces(keyed, options)).toThrowError(
          expect.objectContaining({ code: OTLP_NESTING.code }),
        );
      });

      it('gives spans without a key no ids and no name, and still refuses their invalid ids', () => {
        const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
        const identities = (spans: ReturnType<typeof decodeTraces>) =>
          spans.map((decoded) => [decoded.traceId, decoded.spanId, decoded.name]);
        const expected = [
          [hex(1, 32), hex(1, 16), 'span 1'],
          ['', '', ''],
          [hex(1, 32), hex(3, 16), 'span 3'],
          [hex(1, 32), hex(4, 16), 'span 4'], // keyed by its resource
        ];
        expect(identities(decodeTraces(bytes, options))).toEqual(expected);
        const json = JSON.stringify(encodeTracesJson(decodeTraces(bytes)));
        expect(identities(decodeTracesJson(json, options))).toEqual(expected);

        const child = (attributes: object[]) =>
          officialEncode({
            resourceSpans: [resourceSpans([], [{ ...span(5, attributes), parentSpanId: spanId(9) }])],
          });
        expect(decodeTraces(child([status]), options)[0]).toMatchObject({
          parentSpanId: '',
          kind: 2,
          startTimeUnixMillis: 1_700_000_000_000,
          endTimeUnixMillis: 1_700_000_001_000,
          attributes: { 'http.response.status_code': 503 },
        });
        expect(decodeTraces(child([key]), options)[0]!.parentSpanId).toBe(hex(9, 16));
        const zeroSpanId = officialEncode({
          resourceSpans: [resourceSpans([], [{ ...span(6, [status]), spanId: new Uint8Array(8) }])],
        });
        expect(() => decodeTraces(zeroSpanId, options)).toThrowError(
          expect.objectContaining({ code: OTLP_ID_ZERO.code }),
        );
      });

      it('decodes from OTLP JSON exactly as from protobuf', () => {
        const json = JSON.stringify(encodeTracesJson(decodeTraces(bytes)));
        expect(decodeTracesJson(json, options)).toEqual(decodeTraces(bytes, options));
      });

      describe('with unkeyedKinds', () => {
        const withKinds = (kinds: Iterable<number>) => ({
          ...options,
          spanAttributes: { ...selection, unkeyedKinds: new Set(kinds) as Set<0 | 1 | 2 | 3 | 4 | 5> },
        });
        const ofKind = (n: number, kind: number, attributes: object[]) => ({ ...span(n, attributes), kind });
        const mixed = officialEncode({
          resourceSpans: [
            resourceSpans(
              [],
              [
                ofKind(1, 3, [status]), // CLIENT, no key: left out
                ofKind(2, 2, [status]), // SERVER, no key: returned
                ofKind(3, 3, [key]), // CLIENT with a key: returned
                ofKind(4, 1, []), // INTERNAL, no key: left out
                ofKind(5, 9, []), // a kind outside OTLP's values: UNSPECIFIED, left out
              ],
            ),
            resourceSpans([key], [ofKind(6, 1, [])]), // keyed by its resource: returned
          ],
        });
        const serverOnly = withKinds([2]);

        it('returns spans without a key only of the kinds listed, and counts every span', () => {
          const decoded = decodeTraceRequest(mixed, serverOnly);
          expect(decoded.spans.map((s) => [s.kind, s.traceId === ''])).toEqual([
            [2, true],
            [3, false],
            [1, false],
          ]);
          expect(decoded.spanCount).toBe(6);
          expect(decodeTraces(mixed, serverOnly)).toEqual(decoded.spans);
          // The spans returned are what the selection alone gives for them.
          const every = decodeTraceRequest(mixed, options);
          expect(every.spanCount).toBe(6);
          expect(decoded.spans).toEqual([every.spans[1], every.spans[2], every.spans[5]]);
          // The fifth span's kind reads as UNSPECIFIED.
          expect(decodeTraceRequest(mixed, withKinds([0])).spans.map((s) => s.spanId)).toEqual([
            hex16(3),
            '',
            hex16(6),
          ]);
        });

        it('decodes from OTLP JSON exactly as from protobuf', () => {
          const json = JSON.stringify(encodeTracesJson(decodeTraces(mixed)));
          expect(decodeTraceRequestJson(json, serverOnly)).toEqual(decodeTraceRequest(mixed, serverOnly));
        });

        it('still refuses a span it leaves out when the span is malformed', () => {
          const zeroSpanId = officialEncode({
            resourceSpans: [resourceSpans([], [{ ...ofKind(7, 3, [status]), spanId: new Uint8Array(8) }])],
          });
          expect(() => decodeTraces(zeroSpanId, serverOnly)).toThrowError(
            expect.objectContaining({ code: OTLP_ID_ZERO.code }),
          );
          const json = JSON.stringify(encodeTracesJson(decodeTraces(mixed)));
          const badTime = json.replace(/"startTimeUnixNano":"[0-9]+"/, '"startTimeUnixNano":"soon"');
          expect(() => decodeTracesJson(badTime, serverOnly)).toThrowError(
            expect.objectContaining({ code: OTLP_JSON.code }),
          );
        });

        it('refuses kinds that are not a set of OTLP span kinds', () => {
          const broken = (unkeyedKinds: unknown) => ({
            spanAttributes: { ...selection, unkeyedKinds } as typeof selection,
          });
          expect(() => decodeTraces(bytes, broken([2]))).toThrow(TypeError);
          expect(() => decodeTraces(bytes, broken(new Set([6])))).toThrow(RangeError);
          expect(() => decodeTraces(bytes, broken(new Set(['SERVER'])))).toThrow(RangeError);
        });
      });

      describe('with failedKinds', () => {
        const linking = {
          spanAttributes: {
            ...selection,
            whenKeyed: new Set(['http.route', 'server.address', 'error.type']),
            unkeyedKinds: new Set([2] as const),
            failedKinds: new Set([3] as const),
            linkAttributes: new Set(['server.address', 'error.type']),
          },
          resourceAttributes: new Set(['idempotency.key']),
        };
        const address = { key: 'server.address', value: text('payments') };
        const timeout = { key: 'error.type', value: text('timeout') };
        const failed = { code: 2, message: 'timed out' };
        const send = (n: number, kind: number, attributes: object[], status?: object) => ({
          ...span(n, attributes),
          kind,
          parentSpanId: spanId(90 + n),
          ...(status === undefined ? {} : { status }),
        });
        const sends = officialEncode({
          resourceSpans: [
            resourceSpans(
              [],
              [
                send(1, 3, [route('/pay'), address, status, timeout], failed), // failed CLIENT, no key
                send(2, 2, [route('/pay'), address, status], failed), // failed SERVER, no key: no ids
                send(3, 3, [route('/pay'), address, key]), // CLIENT with its key
                send(4, 3, [route('/pay'), address, status]), // CLIENT, no key, answered: left out
              ],
            ),
          ],
        });
        const identities = (spans: ReturnType<typeof decodeTraces>) =>
          spans.map((decoded) => [decoded.spanId, decoded.parentSpanId, decoded.name]);
        const expected = [
          [hex16(1), hex16(91), 'span 1'],
          ['', '', ''],
          [hex16(3), hex16(93), 'span 3'],
        ];

        it('returns failed CLIENT spans without a key with their ids, name and link attributes, and no other', () => {
          const decoded = decodeTraceRequest(sends, linking);
          expect(identities(decoded.spans)).toEqual(expected);
          expect(decoded.spanCount).toBe(4);
          expect(decoded.spans[0]).toMatchObject({
            traceId: '1'.padStart(32, '0'),
            kind: 3,
            status: { code: 2, message: 'timed out' },
            startTimeUnixMillis: 1_700_000_000_000,
            endTimeUnixMillis: 1_700_000_001_000,
          });
          expect(decoded.spans.map((s) => s.attributes)).toEqual([
            { 'server.address': 'payments', 'http.response.status_code': 503, 'error.type': 'timeout' },
            { 'http.response.status_code': 503 },
            { 'http.route': '/pay', 'server.address': 'payments', 'idempotency.key': 'k-1' },
          ]);
          // Without failedKinds, the failed CLIENT span is left out like the answered one.
          const plain = { ...linking, spanAttributes: { ...selection, unkeyedKinds: new Set([2] as const) } };
          expect(identities(decodeTraces(sends, plain))).toEqual([expected[1], expected[2]]);
        });

        it('reads link attributes that come before the span kind and status', () => {
          // Kind and status after the attributes: the decoder learns the span failed at its end.
          const keyValue = (name: string, value: string) =>
            wire.len(9, wire.text(1, name), wire.len(2, wire.text(1, value)));
          const spanBytes = wire.concat([
            wire.len(1, [...traceId(1)]),
            wire.len(2, [...spanId(7)]),
            wire.len(4, [...spanId(97)]),
            keyValue('server.address', 'payments'),
            keyValue('http.route', '/pay'),
            keyValue('error.type', 'timeout'),
            wire.len(15, wire.uint(3, 2)),
            wire.uint(6, 3),
            wire.fixed64(7, 1_700_000_000_000_000_000n),
            wire.fixed64(8, 1_700_000_001_000_000_000n),
          ]);
          const request = wire.bytes(wire.len(1, wire.len(2, wire.len(2, spanBytes))));
          const decoded = decodeTraces(request, linking);
          expect(decoded).toMatchObject([{ spanId: hex16(7), parentSpanId: hex16(97), kind: 3 }]);
          expect({ ...decoded[0]!.attributes }).toEqual({
            'server.address': 'payments',
            'error.type': 'timeout',
          });
        });

        it('decodes from OTLP JSON exactly as from protobuf', () => {
          const json = JSON.stringify(encodeTracesJson(decodeTraces(sends)));
          const fromJson = decodeTraceRequestJson(json, linking);
          expect(identities(fromJson.spans)).toEqual(expected);
          expect(fromJson).toEqual(decodeTraceRequest(sends, linking));
        });

        it('refuses failed kinds and link attributes that are not sets', () => {
          const broken = (part: object) => ({
            spanAttributes: { ...selection, ...part } as typeof selection,
          });
          expect(() => decodeTraces(bytes, broken({ failedKinds: [3] }))).toThrow(TypeError);
          expect(() => decodeTraces(bytes, broken({ failedKinds: new Set([7]) }))).toThrow(RangeError);
          expect(() => decodeTraces(bytes, broken({ linkAttributes: ['error.type'] }))).toThrow(TypeError);
        });
      });

      it('refuses a selection whose parts are not sets', () => {
        const broken = { ...selection, whenKeyed: ['http.route'] } as unknown as typeof selection;
        expect(() => decodeTraces(bytes, { spanAttributes: broken })).toThrow(TypeError);
      });
    });

    it('refuses options that are programming errors', () => {
      expect(() => decodeTraces(payload, { maxDepth: -1 })).toThrow(RangeError);
      expect(() => decodeTraces(payload, { maxDepth: 1.5 })).toThrow(RangeError);
      expect(() => decodeTraces(payload, { maxDepth: 100_000 })).toThrow(RangeError);
      // biome-ignore lint/suspicious/noExplicitAny: deliberately wrong type
      expect(() => decodeTraces(payload, { spanAttributes: ['a'] as any })).toThrow(TypeError);
    });
  });
});

describe('createTracesDecoder', () => {
  const payload = payloadOf(sdkSpans());
  const serviceOnly = { resourceAttributes: new Set(['service.name']) };

  it('hands its own later requests the resources it decoded, and no other decoder', () => {
    const first = createTracesDecoder(serviceOnly);
    const second = createTracesDecoder(serviceOnly);
    const resource = first.decodeTraces(payload)[0]!.resource;
    expect(first.decodeTraces(payload)[0]!.resource).toBe(resource);
    const elsewhere = second.decodeTraces(payload)[0]!.resource;
    expect(elsewhere).not.toBe(resource);
    expect(elsewhere).toEqual(resource);
    expect(first.decodeTraceRequest(payload).spans[0]!.resource).toBe(resource);
  });

  it('keeps decodeTraces callers with options objects of their own apart, even with the same key set', () => {
    const keys = new Set(['service.name']);
    const mine = { resourceAttributes: keys };
    const theirs = { resourceAttributes: keys };
    const resource = decodeTraces(payload, mine)[0]!.resource;
    expect(decodeTraces(payload, mine)[0]!.resource).toBe(resource);
    const elsewhere = decodeTraces(payload, theirs)[0]!.resource;
    expect(elsewhere).not.toBe(resource);
    expect(elsewhere).toEqual(resource);
  });

  it('decodes as a decoder of its own would while decoders with other options take turns with it', () => {
    const selection = {
      keys: new Set(['idempotency.key']),
      always: new Set<string>(),
      whenKeyed: new Set(['http.route']),
    };
    const keyed = (n: number) => ({ key: 'idempotency.key', value: { stringValue: `k-${n}` } });
    const bodies = [1, 2, 3].map((n) =>
      officialEncode(
        requestWithAttributes([
          { key: 'http.route', value: { stringValue: `/pay/${n}` } },
          ...(n === 2 ? [] : [keyed(n)]),
        ]),
      ),
    );
    const decoders = [createTracesDecoder(), createTracesDecoder({ spanAttributes: selection })];
    for (const body of bodies) {
      expect(decoders[0]!.decodeTraces(body)).toEqual(referenceDecode(body));
      expect(decoders[1]!.decodeTraces(body)).toEqual(
        createTracesDecoder({ spanAttributes: selection }).decodeTraces(body),
      );
    }
  });

  it('gives the first span after a failed payload only its own attributes', () => {
    // Under a keyed selection, a span's whenKeyed attributes wait for its key, noted by where they
    // lie in the payload. The failed payload's waiting route lies where the next payload has its
    // own, with a longer value: read from there it would fail, or be another route.
    const decoder = createTracesDecoder({
      spanAttributes: {
        keys: new Set(['idempotency.key']),
        always: new Set(['deep']),
        whenKeyed: new Set(['http.route']),
      },
      maxDepth: 2,
    });
    const route = (value: string) => ({ key: 'http.route', value: { stringValue: value } });
    const nested = (depth: number): object =>
      depth === 0 ? { stringValue: 'leaf' } : { arrayValue: { values: [nested(depth - 1)] } };
    const failing = officialEncode(
      requestWithAttributes([route('/held'), { key: 'deep', value: nested(5) }]),
    );
    const next = officialEncode(
      requestWithAttributes([
        route('/next/longer'),
        { key: 'idempotency.key', value: { stringValue: 'k-1' } },
      ]),
    );
    const at = (bytes: Uint8Array) => Buffer.from(bytes).indexOf('http.route');
    expect(at(next)).toBe(at(failing));
    expect(() => decoder.decodeTraces(failing)).toThrowError(
      expect.objectContaining({ code: OTLP_NESTING.code }),
    );
    expect(decoder.decodeTraces(next)[0]!.attributes).toEqual({
      'http.route': '/next/longer',
      'idempotency.key': 'k-1',
    });
  });
});
