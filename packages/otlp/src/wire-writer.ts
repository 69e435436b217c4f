import { nanoHalvesFromMicros } from './time.ts';

const encoder = new TextEncoder();
const scratch = new DataView(new ArrayBuffer(8));

/**
 * A growable protobuf wire-format writer. Nested messages reserve one length byte and, when the
 * body turns out to be 128 bytes or longer, shift it right once to fit the longer varint: small
 * messages (most KeyValues) never move, and no size pass over the data is needed.
 */
export class WireWriter {
  private bytes: Uint8Array;
  private pos = 0;

  constructor(initialBytes = 1024) {
    this.bytes = new Uint8Array(initialBytes);
  }

  private ensure(extra: number): void {
    const needed = this.pos + extra;
    if (needed <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < needed) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.bytes.subarray(0, this.pos));
    this.bytes = grown;
  }

  /** A varint of a non-negative integer up to 2^53. */
  varint(value: number): void {
    this.ensure(10);
    this.pos = this.varintAt(this.pos, value);
  }

  /** Writes a varint at `pos` (capacity already ensured) and returns the position after it. */
  private varintAt(pos: number, value: number): number {
    const bytes = this.bytes;
    while (value >= 0x80) {
      bytes[pos++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    bytes[pos++] = value;
    return pos;
  }

  /** A field's tag (see proto-message.ts); the value follows. */
  tag(fieldTag: number): void {
    this.varint(fieldTag);
  }

  /** An int64 varint: negative values take ten bytes (two's complement), as protobuf writes them. */
  int64(value: number | bigint): void {
    if (typeof value === 'number' && value >= 0) {
      this.varint(value);
      return;
    }
    let bits = BigInt.asUintN(64, BigInt(value));
    this.ensure(10);
    while (bits >= 0x80n) {
      this.bytes[this.pos++] = Number(bits & 0x7fn) | 0x80;
      bits >>= 7n;
    }
    this.bytes[this.pos++] = Number(bits);
  }

  /** A fixed64 of `micros × 1000` nanoseconds (see time.ts). */
  fixed64Micros(micros: number): void {
    const { low, high } = nanoHalvesFromMicros(micros);
    this.fixed32(low);
    this.fixed32(high);
  }

  fixed32(value: number): void {
    this.ensure(4);
    const bytes = this.bytes;
    const pos = this.pos;
    bytes[pos] = value & 0xff;
    bytes[pos + 1] = (value >>> 8) & 0xff;
    bytes[pos + 2] = (value >>> 16) & 0xff;
    bytes[pos + 3] = (value >>> 24) & 0xff;
    this.pos = pos + 4;
  }

  double(value: number): void {
    this.ensure(8);
    scratch.setFloat64(0, value, true);
    for (let i = 0; i < 8; i++) this.bytes[this.pos + i] = scratch.getUint8(i);
    this.pos += 8;
  }

  /** A LEN field of bytes; `fieldTag` is the field's tag. */
  bytesField(fieldTag: number, value: Uint8Array): void {
    this.varint(fieldTag);
    this.varint(value.length);
    this.ensure(value.length);
    this.bytes.set(value, this.pos);
    this.pos += value.length;
  }

  /** A LEN field of UTF-8 text; `fieldTag` is the field's tag. */
  stringField(fieldTag: number, value: string): void {
    this.varint(fieldTag);
    const length = value.length;
    if (length < 0x80) {
      // Short ASCII (keys, names, most values) is written directly: encodeInto needs a view per call.
      this.ensure(1 + length);
      const bytes = this.bytes;
      const start = this.pos + 1;
      let i = 0;
      while (i < length) {
        const code = value.charCodeAt(i);
        if (code >= 0x80) break;
        bytes[start + i] = code;
        i++;
      }
      if (i === length) {
        bytes[this.pos] = length;
        this.pos = start + length;
        return;
      }
    }
    // A UTF-16 code unit takes at most 3 UTF-8 bytes; reserve that, write, then size the prefix.
    const maxBytes = value.length * 3;
    const lengthPos = this.pos;
    const prefixBytes = varintSize(maxBytes);
    this.ensure(prefixBytes + maxBytes);
    const { written } = encoder.encodeInto(value, this.bytes.subarray(lengthPos + prefixBytes));
    const actualPrefix = varintSize(written);
    if (actualPrefix !== prefixBytes) {
      this.bytes.copyWithin(
        lengthPos + actualPrefix,
        lengthPos + prefixBytes,
        lengthPos + prefixBytes + written,
      );
    }
    this.pos = this.varintAt(lengthPos, written) + written;
  }

  /** Starts a nested message in the LEN field tagged `fieldTag`; pass the result to `endMessage`. */
  beginMessage(fieldTag: number): number {
    this.varint(fieldTag);
    this.ensure(1);
    return this.pos++;
  }

  endMessage(lengthPos: number): void {
    const length = this.pos - lengthPos - 1;
    if (length < 0x80) {
      this.bytes[lengthPos] = length;
      return;
    }
    const extra = varintSize(length) - 1;
    this.ensure(extra);
    this.bytes.copyWithin(lengthPos + 1 + extra, lengthPos + 1, this.pos);
    this.varintAt(lengthPos, length);
    this.pos += extra;
  }

  /** The bytes written so far, as an exact-length copy. */
  finish(): Uint8Array {
    return this.bytes.slice(0, this.pos);
  }
}

function varintSize(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size++;
  }
  return size;
}
