/**
 * A tiny protobuf wire-format builder for hand-made payloads: malformed ones, and valid ones with
 * layouts the encoders never produce (unknown fields, fields out of order, repeated oneofs).
 * Independent of src/wire-writer.ts on purpose.
 */
export type Bytes = number[];

/** Concatenates without spreading: test payloads reach hundreds of thousands of bytes. */
export function concat(parts: readonly Bytes[]): Bytes {
  const out: Bytes = [];
  for (const part of parts) for (let i = 0; i < part.length; i++) out.push(part[i]!);
  return out;
}

export function varint(value: number | bigint): Bytes {
  if (typeof value === 'number' && value >= 0 && value < 2 ** 31) {
    const out: Bytes = [];
    while (value >= 0x80) {
      out.push((value & 0x7f) | 0x80);
      value >>>= 7;
    }
    out.push(value);
    return out;
  }
  let bits = BigInt.asUintN(64, BigInt(value));
  const out: Bytes = [];
  while (bits >= 0x80n) {
    out.push(Number(bits & 0x7fn) | 0x80);
    bits >>= 7n;
  }
  out.push(Number(bits));
  return out;
}

export const tag = (field: number, wireType: number): Bytes => varint(field * 8 + wireType);

export const len = (field: number, ...content: Bytes[]): Bytes => {
  const body = concat(content);
  return concat([tag(field, 2), varint(body.length), body]);
};

export const uint = (field: number, value: number | bigint): Bytes => [...tag(field, 0), ...varint(value)];

export function fixed64(field: number, value: bigint): Bytes {
  const out = tag(field, 1);
  for (let i = 0n; i < 8n; i++) out.push(Number((value >> (8n * i)) & 0xffn));
  return out;
}

export const fixed32 = (field: number, value: number): Bytes => [
  ...tag(field, 5),
  value & 0xff,
  (value >>> 8) & 0xff,
  (value >>> 16) & 0xff,
  (value >>> 24) & 0xff,
];

export const text = (field: number, value: string): Bytes => len(field, [...new TextEncoder().encode(value)]);

export const hexBytes = (hex: string): Bytes => [...Buffer.from(hex, 'hex')];

export const bytes = (...parts: Bytes[]): Uint8Array => Uint8Array.from(concat(parts));

/** Every wire type once, under field numbers no OTLP message uses. */
export const unknownFields = (): Bytes => [
  ...uint(1000, 123456789),
  ...fixed64(1001, 0xdeadbeefn),
  ...len(1002, [1, 2, 3, 0xff]),
  ...fixed32(1003, 7),
  ...uint(536870911, 1),
];

export const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
export const SPAN_ID = 'b7ad6b7169203331';

/** A minimal valid span body (Span message content) with `extra` fields appended. */
export function spanBody(...extra: Bytes[]): Bytes {
  return concat([
    len(1, hexBytes(TRACE_ID)),
    len(2, hexBytes(SPAN_ID)),
    text(5, 'span'),
    fixed64(7, 1_700_000_000_000_000_000n),
    fixed64(8, 1_700_000_001_000_000_000n),
    ...extra,
  ]);
}

/** An ExportTraceServiceRequest with one ResourceSpans, one ScopeSpans and the given span bodies. */
export function requestWithSpans(...spans: Bytes[]): Uint8Array {
  return bytes(len(1, len(2, ...spans.map((span) => len(2, span)))));
}
