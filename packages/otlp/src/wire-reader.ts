import { KeyscopeError } from '@keyscope/errors';
import { OTLP_FIELD_NUMBER, OTLP_TRUNCATED, OTLP_VARINT_TOO_LONG, OTLP_WIRE_TYPE } from './errors.ts';
import { type ProtoMessage, WireType } from './proto-message.ts';
import { millisFromNanoHalves } from './time.ts';

const WIRE_TYPE_NAMES = ['VARINT', 'I64', 'LEN', 'SGROUP', 'EGROUP', 'I32', '6', '7'];

/**
 * A cursor over protobuf wire format. Every read takes `end`, the end of the enclosing message,
 * and fails with OTLP_TRUNCATED instead of reading past it, so a corrupt length can never make a
 * nested message borrow its parent's bytes. Reads never allocate on the common paths.
 */
export class WireReader {
  readonly bytes: Uint8Array;
  pos = 0;
  /** Where the last tag started, for error messages about its field. */
  private tagAt = 0;
  readonly view: DataView;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** A field tag; field number 0 is refused because no message can declare it. */
  tag(end: number): number {
    const pos = this.pos;
    this.tagAt = pos;
    let tag: number;
    if (pos < end && (tag = this.bytes[pos]!) < 0x80) this.pos = pos + 1;
    else tag = this.varint32Slow(end);
    if (tag < 8) {
      throw new KeyscopeError(
        OTLP_FIELD_NUMBER,
        `field number must be at least 1, received 0 (at byte ${pos})`,
      );
    }
    return tag;
  }

  /** A varint's low 32 bits as an unsigned number (uint32, enums, bools). */
  varint32(end: number): number {
    const pos = this.pos;
    if (pos < end) {
      const byte = this.bytes[pos]!;
      if (byte < 0x80) {
        this.pos = pos + 1;
        return byte;
      }
    }
    return this.varint32Slow(end);
  }

  private varint32Slow(end: number): number {
    const bytes = this.bytes;
    const start = this.pos;
    let pos = start;
    let value = 0;
    for (let i = 0; i < 10; i++) {
      if (pos >= end) throw truncatedVarint(start, end);
      const byte = bytes[pos++]!;
      // At i = 4 the shift is 28 and `|` keeps only the 4 bits that fit; later bytes are the
      // high half, which 32-bit fields drop as protobuf does.
      if (i < 5) value |= (byte & 0x7f) << (7 * i);
      if (byte < 0x80) {
        this.pos = pos;
        return value >>> 0;
      }
    }
    throw varintTooLong(start);
  }

  /**
   * An int64 varint as keyscope's attribute value: a number when it is a safe integer, otherwise
   * a bigint. Reads the two 32-bit halves so the common case never touches BigInt.
   */
  int64(end: number): number | bigint {
    const bytes = this.bytes;
    const start = this.pos;
    let pos = start;
    let low = 0;
    let high = 0;
    for (let i = 0; ; i++) {
      if (i === 10) throw varintTooLong(start);
      if (pos >= end) throw truncatedVarint(start, end);
      const byte = bytes[pos++]!;
      if (i < 4) low |= (byte & 0x7f) << (7 * i);
      else if (i === 4) {
        low |= (byte & 0x0f) << 28;
        high = (byte & 0x7f) >>> 4;
      } else high |= (byte & 0x7f) << (7 * i - 32);
      if (byte < 0x80) break;
    }
    this.pos = pos;
    if (high >= 0) {
      // Non-negative: safe while below 2^53, i.e. the high half below 2^21.
      if (high < 0x200000) return high * 4294967296 + (low >>> 0);
      return (BigInt(high) << 32n) | BigInt(low >>> 0);
    }
    // Negative: negate the two's complement halves to get the magnitude.
    const negLow = (~low + 1) >>> 0;
    const negHigh = (~high + (negLow === 0 ? 1 : 0)) >>> 0;
    if (negHigh < 0x200000) return -(negHigh * 4294967296 + negLow);
    return BigInt.asIntN(64, (BigInt(high >>> 0) << 32n) | BigInt(low >>> 0));
  }

  /** A varint as a bool: any non-zero value is true. */
  bool(end: number): boolean {
    const pos = this.pos;
    if (pos < end) {
      const byte = this.bytes[pos]!;
      if (byte < 0x80) {
        this.pos = pos + 1;
        return byte !== 0;
      }
    }
    const start = pos;
    // A bool may be encoded in up to 10 bytes; only "is any bit set" matters.
    let any = 0;
    let at = start;
    for (let i = 0; i < 10; i++) {
      if (at >= end) throw truncatedVarint(start, end);
      const byte = this.bytes[at++]!;
      any |= byte & 0x7f;
      if (byte < 0x80) {
        this.pos = at;
        return any !== 0;
      }
    }
    throw varintTooLong(start);
  }

  /**
   * The length prefix of a LEN field: moves to its first byte and returns its end, after checking
   * it fits inside `end`.
   */
  lengthEnd(end: number): number {
    const pos = this.pos;
    if (pos < end) {
      const length = this.bytes[pos]!;
      if (length < 0x80) {
        const contentEnd = pos + 1 + length;
        if (contentEnd > end) throw lengthPastEnd(pos, length, end - pos - 1);
        this.pos = pos + 1;
        return contentEnd;
      }
    }
    return this.lengthEndSlow(end);
  }

  private lengthEndSlow(end: number): number {
    const bytes = this.bytes;
    const start = this.pos;
    let pos = start;
    // Accumulated as a double: a length beyond 2^32 must fail as "past the end", not wrap around
    // into a small plausible length.
    let length = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      if (i === 10) throw varintTooLong(start);
      if (pos >= end) throw truncatedVarint(start, end);
      const byte = bytes[pos++]!;
      length += (byte & 0x7f) * scale;
      scale *= 128;
      if (byte < 0x80) break;
    }
    if (length > end - pos) throw lengthPastEnd(start, length, end - pos);
    this.pos = pos;
    return pos + length;
  }

  /** A fixed64 of Unix nanoseconds as fractional Unix milliseconds (see time.ts). */
  fixed64Millis(end: number): number {
    return this.millisAt(this.fixed64At(end));
  }

  /** Steps over a fixed64, checked to fit before `end`; returns where it starts (for `millisAt`). */
  fixed64At(end: number): number {
    const pos = this.pos;
    if (end - pos < 8) throw truncatedFixed(pos, 8, end);
    this.pos = pos + 8;
    return pos;
  }

  /** The fixed64 at `pos` (one `fixed64At` returned) as fractional Unix milliseconds. */
  millisAt(pos: number): number {
    return millisFromNanoHalves(this.view.getUint32(pos, true), this.view.getUint32(pos + 4, true));
  }

  double(end: number): number {
    const pos = this.pos;
    if (end - pos < 8) throw truncatedFixed(pos, 8, end);
    this.pos = pos + 8;
    return this.view.getFloat64(pos, true);
  }

  /**
   * Skips a field the caller does not decode. A field `message` knows must still carry its
   * declared wire type; groups and the undefined wire types 6 and 7 are refused.
   */
  skip(tag: number, end: number, message: ProtoMessage): void {
    const wireType = tag & 7;
    const number = tag >>> 3;
    const known = message.fields[number];
    const tagStart = this.tagAt;
    if (known !== undefined && known[1] !== wireType) {
      throw new KeyscopeError(
        OTLP_WIRE_TYPE,
        `${message.name}.${known[0]} (field ${number}) must have wire type ${WIRE_TYPE_NAMES[known[1]]}, ` +
          `received ${WIRE_TYPE_NAMES[wireType]} (at byte ${tagStart})`,
      );
    }
    switch (wireType) {
      case WireType.VARINT:
        this.skipVarint(end);
        return;
      case WireType.I64:
        if (end - this.pos < 8) throw truncatedFixed(this.pos, 8, end);
        this.pos += 8;
        return;
      case WireType.LEN:
        this.pos = this.lengthEnd(end);
        return;
      case WireType.I32:
        if (end - this.pos < 4) throw truncatedFixed(this.pos, 4, end);
        this.pos += 4;
        return;
      default:
        throw new KeyscopeError(
          OTLP_WIRE_TYPE,
          `${message.name} field ${number} must have wire type VARINT, I64, LEN or I32, ` +
            `received ${WIRE_TYPE_NAMES[wireType]} (at byte ${tagStart})`,
        );
    }
  }

  private skipVarint(end: number): void {
    const start = this.pos;
    let pos = start;
    for (let i = 0; i < 10; i++) {
      if (pos >= end) throw truncatedVarint(start, end);
      if (this.bytes[pos++]! < 0x80) {
        this.pos = pos;
        return;
      }
    }
    throw varintTooLong(start);
  }
}

function truncatedVarint(start: number, end: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_TRUNCATED,
    `varint must end before its message ends, received ${end - start} bytes without a final byte (at byte ${start})`,
  );
}

function varintTooLong(start: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_VARINT_TOO_LONG,
    `varint must be at most 10 bytes, received more (at byte ${start})`,
  );
}

function lengthPastEnd(start: number, length: number, available: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_TRUNCATED,
    `length-delimited field must fit in its message, received length ${length} with ${available} bytes left (at byte ${start})`,
  );
}

function truncatedFixed(start: number, size: number, end: number): KeyscopeError {
  return new KeyscopeError(
    OTLP_TRUNCATED,
    `fixed-width field needs ${size} bytes, received ${end - start} (at byte ${start})`,
  );
}
