import { describe, expect, it } from 'vitest';
import { decodeTraces } from '../src/decode-protobuf.ts';
import {
  OTLP_FIELD_NUMBER,
  OTLP_ID_LENGTH,
  OTLP_ID_ZERO,
  OTLP_NESTING,
  OTLP_TRUNCATED,
  OTLP_UTF8,
  OTLP_VARINT_TOO_LONG,
  OTLP_WIRE_TYPE,
} from '../src/errors.ts';
import { expectCode } from './support/expect-code.ts';
import { referenceDecode } from './support/reference-decoder.ts';
import {
  type Bytes,
  bytes,
  fixed32,
  fixed64,
  hexBytes,
  len,
  requestWithSpans,
  SPAN_ID,
  spanBody,
  TRACE_ID,
  tag,
  text,
  uint,
  varint,
} from './support/wire.ts';

const decode = (payload: Uint8Array) => () => decodeTraces(payload);
/** A span whose only attribute has the given AnyValue body. */
const withValue = (value: Bytes) => requestWithSpans(spanBody(len(9, text(1, 'a'), len(2, value))));

describe('decodeTraces refuses malformed protobuf', () => {
  it('refuses a payload that ends inside a tag, a length or a varint', () => {
    expectCode(decode(bytes([0x0a])), OTLP_TRUNCATED);
    expectCode(decode(bytes([0x0a, 0x80])), OTLP_TRUNCATED);
    expectCode(decode(bytes([0x80])), OTLP_TRUNCATED);
    expectCode(decode(bytes(tag(1000, 0), [0xff, 0xff])), OTLP_TRUNCATED);
  });

  it('refuses a length that runs past the end of the payload', () => {
    expectCode(decode(bytes([0x0a, 0x05, 0x00, 0x00])), OTLP_TRUNCATED);
    expectCode(decode(bytes([0x0a], varint(2 ** 40), [0x00])), OTLP_TRUNCATED);
    // 2^32 + 1 must not wrap around to a plausible length of 1.
    expectCode(decode(bytes([0x0a], varint(2 ** 32 + 1), [0x00])), OTLP_TRUNCATED);
  });

  it('refuses a nested message whose length runs past its parent, even if the payload has the bytes', () => {
    // ResourceSpans claims 2 bytes, but its scope_spans field claims 5.
    const payload = bytes([0x0a, 0x02, 0x12, 0x05], [0x00, 0x00, 0x00, 0x00, 0x00]);
    expectCode(decode(payload), OTLP_TRUNCATED);
  });

  it('refuses fixed-width fields cut short', () => {
    const spanWithShortTime = [
      ...len(1, hexBytes(TRACE_ID)),
      ...len(2, hexBytes(SPAN_ID)),
      ...tag(7, 1),
      1,
      2,
      3,
    ];
    expectCode(decode(requestWithSpans(spanWithShortTime)), OTLP_TRUNCATED);
    expectCode(decode(bytes(tag(1000, 5), [1, 2])), OTLP_TRUNCATED);
    expectCode(decode(bytes(tag(1000, 1), [1, 2, 3, 4, 5, 6, 7])), OTLP_TRUNCATED);
    expectCode(decode(withValue([...tag(4, 1), 0, 0, 0])), OTLP_TRUNCATED);
  });

  it('refuses varints longer than ten bytes', () => {
    const eleven = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
    expectCode(decode(bytes(tag(1000, 0), eleven)), OTLP_VARINT_TOO_LONG);
    expectCode(decode(bytes(eleven)), OTLP_VARINT_TOO_LONG);
    expectCode(decode(bytes([0x0a], eleven)), OTLP_VARINT_TOO_LONG);
    expectCode(decode(withValue([...tag(3, 0), ...eleven])), OTLP_VARINT_TOO_LONG);
    expectCode(decode(withValue([...tag(2, 0), ...eleven])), OTLP_VARINT_TOO_LONG);
    expectCode(decode(requestWithSpans(spanBody([...tag(6, 0), ...eleven]))), OTLP_VARINT_TOO_LONG);
  });

  it('refuses a known field with the wrong wire type', () => {
    expectCode(decode(bytes(uint(1, 1))), OTLP_WIRE_TYPE);
    expectCode(decode(requestWithSpans(spanBody(len(6, [2])))), OTLP_WIRE_TYPE);
    expectCode(decode(requestWithSpans(spanBody(uint(7, 5)))), OTLP_WIRE_TYPE);
    expectCode(decode(requestWithSpans(spanBody(fixed64(16, 1n)))), OTLP_WIRE_TYPE);
    expectCode(decode(requestWithSpans(spanBody(uint(3, 1)))), OTLP_WIRE_TYPE);
    expectCode(decode(withValue(fixed32(4, 0))), OTLP_WIRE_TYPE);
    expectCode(decode(withValue(len(3, [1]))), OTLP_WIRE_TYPE);
  });

  it('refuses groups and the undefined wire types, known field or not', () => {
    for (const wireType of [3, 4, 6, 7]) {
      expectCode(decode(bytes(tag(1, wireType))), OTLP_WIRE_TYPE);
      expectCode(decode(bytes(tag(1000, wireType))), OTLP_WIRE_TYPE);
      expectCode(decode(requestWithSpans(spanBody(tag(99, wireType)))), OTLP_WIRE_TYPE);
    }
  });

  it('refuses field number 0', () => {
    expectCode(decode(bytes([0x02, 0x00])), OTLP_FIELD_NUMBER);
    expectCode(decode(requestWithSpans(spanBody([0x00]))), OTLP_FIELD_NUMBER);
  });

  it('refuses trace and span ids of the wrong length, and missing ones', () => {
    const span = (...fields: Bytes[]) => requestWithSpans(fields.flat());
    const trace = len(1, hexBytes(TRACE_ID));
    const spanId = len(2, hexBytes(SPAN_ID));
    expectCode(decode(span(trace, len(2, [1, 2, 3]))), OTLP_ID_LENGTH);
    expectCode(decode(span(len(1, hexBytes(TRACE_ID).slice(1)), spanId)), OTLP_ID_LENGTH);
    expectCode(decode(span(len(1, [...hexBytes(TRACE_ID), 0]), spanId)), OTLP_ID_LENGTH);
    expectCode(decode(span(spanId)), OTLP_ID_LENGTH);
    expectCode(decode(span(trace)), OTLP_ID_LENGTH);
    expectCode(decode(span(len(1, []), spanId)), OTLP_ID_LENGTH);
    expectCode(decode(span(trace, spanId, len(4, [1, 2, 3, 4]))), OTLP_ID_LENGTH);
  });

  it('refuses all-zero trace and span ids', () => {
    const span = (...fields: Bytes[]) => requestWithSpans(fields.flat());
    expectCode(decode(span(len(1, new Array(16).fill(0)), len(2, hexBytes(SPAN_ID)))), OTLP_ID_ZERO);
    expectCode(decode(span(len(1, hexBytes(TRACE_ID)), len(2, new Array(8).fill(0)))), OTLP_ID_ZERO);
  });

  it('refuses invalid UTF-8 in every kind of string field', () => {
    const invalid = [
      [0xff],
      [0xc0, 0x80], // overlong NUL
      [0xed, 0xa0, 0x80], // a UTF-16 surrogate
      [0xe2, 0x82], // truncated sequence
      [...new TextEncoder().encode('x'.repeat(40)), 0x80], // past the short-string fast path
    ];
    for (const sequence of invalid) {
      expectCode(decode(requestWithSpans(spanBody(len(5, sequence)))), OTLP_UTF8);
      expectCode(
        decode(requestWithSpans(spanBody(len(9, len(1, sequence), len(2, text(1, 'v')))))),
        OTLP_UTF8,
      );
      expectCode(decode(withValue(len(1, sequence))), OTLP_UTF8);
      expectCode(decode(requestWithSpans(spanBody(len(15, len(2, sequence))))), OTLP_UTF8);
      expectCode(decode(requestWithSpans(spanBody(len(11, len(2, sequence))))), OTLP_UTF8);
      expectCode(decode(bytes(len(1, len(2, len(1, len(1, sequence)))))), OTLP_UTF8);
    }
  });

  it('refuses values nested deeper than maxDepth without deep recursion', () => {
    // 20,000 levels of array_value (unbounded recursion would overflow the stack), built inside
    // out in one pass: prefixes[i] wraps level i.
    const leaf = text(1, 'leaf');
    const prefixes: Bytes[] = [];
    let inner = leaf.length;
    for (let i = 0; i < 20_000; i++) {
      const item = [...tag(1, 2), ...varint(inner)];
      const array = [...tag(5, 2), ...varint(item.length + inner)];
      prefixes.push([...array, ...item]);
      inner += array.length + item.length;
    }
    const value: Bytes = [];
    for (let i = prefixes.length - 1; i >= 0; i--) for (const byte of prefixes[i]!) value.push(byte);
    value.push(...leaf);
    expectCode(decode(withValue(value)), OTLP_NESTING);
    let list: Bytes = text(1, 'leaf');
    for (let i = 0; i < 40; i++) list = len(6, len(1, text(1, 'k'), len(2, list)));
    expectCode(decode(withValue(list)), OTLP_NESTING);
  });
});

describe('decodeTraces reads valid layouts the encoders never produce', () => {
  it('skips unknown fields of every wire type at every level', () => {
    const unknown = (): Bytes => [
      ...uint(1000, 123456789),
      ...uint(1001, -1),
      ...fixed64(1002, 0xdeadbeefn),
      ...len(1003, [1, 2, 3, 0xff]),
      ...fixed32(1004, 7),
      ...uint(536870911, 1),
    ];
    const plain = bytes(
      len(
        1,
        len(1, len(1, text(1, 'service.name'), len(2, text(1, 'payments')))),
        len(2, len(2, spanBody())),
      ),
    );
    const noisy = bytes(
      unknown(),
      len(
        1,
        unknown(),
        len(1, unknown(), len(1, unknown(), text(1, 'service.name'), len(2, unknown(), text(1, 'payments')))),
        len(2, unknown(), len(1, unknown()), len(2, spanBody(unknown(), len(15, unknown())))),
        text(3, 'https://opentelemetry.io/schemas/1.26.0'),
      ),
      unknown(),
    );
    const expected = decodeTraces(plain);
    expect(expected).toHaveLength(1);
    const received = decodeTraces(noisy);
    expect(received).toEqual(expected);
    expect(received).toEqual(referenceDecode(noisy));
  });

  it('skips the fields keyscope does not keep: trace state, links, flags, dropped counts', () => {
    const extra = [
      ...text(3, 'vendor=value'),
      ...uint(10, 2),
      ...uint(12, 3),
      ...len(13, len(1, hexBytes(TRACE_ID)), len(2, hexBytes(SPAN_ID)), len(4, text(1, 'k'))),
      ...uint(14, 4),
      ...fixed32(16, 0x301),
    ];
    expect(decodeTraces(requestWithSpans(spanBody(extra)))).toEqual(
      decodeTraces(requestWithSpans(spanBody())),
    );
  });

  it('reads fields in any order: the resource after the spans, the value before the key', () => {
    const resource = len(1, len(1, len(2, text(1, 'payments')), text(1, 'service.name')));
    const scopeSpans = len(2, len(2, spanBody()), len(1, text(1, 'scope')));
    const [span] = decodeTraces(bytes(len(1, scopeSpans, resource)));
    expect(span!.resource.attributes).toEqual({ 'service.name': 'payments' });
    expect(span!.scope).toEqual({ name: 'scope', version: '' });
    expect([span]).toEqual(referenceDecode(bytes(len(1, scopeSpans, resource))));
  });

  it('keeps the last of repeated scalar fields and oneof members, as protobuf does', () => {
    const payload = withValue([...text(1, 'first'), ...uint(3, 5)]);
    expect(decodeTraces(payload)[0]!.attributes.a).toBe(5);
    const renamed = requestWithSpans(spanBody(text(5, 'second')));
    expect(decodeTraces(renamed)[0]!.name).toBe('second');
  });

  it('reads bools and ints written with redundant varint bytes', () => {
    expect(decodeTraces(withValue([...tag(2, 0), 0x80, 0x00]))[0]!.attributes.a).toBe(false);
    expect(decodeTraces(withValue([...tag(2, 0), 0x80, 0x01]))[0]!.attributes.a).toBe(true);
    expect(decodeTraces(withValue([...tag(3, 0), 0x85, 0x80, 0x00]))[0]!.attributes.a).toBe(5);
  });
});
