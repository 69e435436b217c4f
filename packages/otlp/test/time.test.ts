import { describe, expect, it } from 'vitest';
import {
  microsFromMillis,
  millisFromNanoHalves,
  millisFromNanoNumber,
  millisFromNanoString,
  nanoHalvesFromMicros,
  nanoStringFromMicros,
} from '../src/time.ts';

const halves = (nanos: bigint) => [Number(nanos & 0xffffffffn), Number(nanos >> 32n)] as const;
const expected = (nanos: bigint) => Number(nanos / 1000n) / 1000;

describe('time conversion', () => {
  const samples = [
    0n,
    999n,
    1000n,
    4_294_967_295n,
    4_294_967_296n,
    1_700_000_000_123_456_789n,
    1_700_000_000_999_999_999n,
    4_102_444_800_999_999_999n,
    2n ** 63n - 1n,
  ];

  it('truncates fixed64 nanoseconds to whole microseconds, exactly as BigInt arithmetic does', () => {
    for (const nanos of samples.slice(0, -1)) {
      const [low, high] = halves(nanos);
      expect(millisFromNanoHalves(low, high), String(nanos)).toBe(expected(nanos));
    }
  });

  it('gives the same milliseconds from the JSON decimal string', () => {
    for (const nanos of samples)
      expect(millisFromNanoString(String(nanos)), String(nanos)).toBe(expected(nanos));
    expect(millisFromNanoNumber(1_700_000_000_123_456)).toBe(1_700_000_000.123);
  });

  it('rejects strings that are not unsigned decimal integers', () => {
    for (const text of ['', '-1', '1.5', '1e9', ' 1', '0x10']) {
      expect(millisFromNanoString(text), text).toBeNaN();
    }
  });

  it('reads digits above 2^64 - 1 as out of range (Infinity), not counting leading zeros', () => {
    for (const text of ['18446744073709551616', '99999999999999999999', '1'.repeat(21)]) {
      expect(millisFromNanoString(text), text).toBe(Number.POSITIVE_INFINITY);
    }
    expect(millisFromNanoString('18446744073709551615')).toBe(expected(2n ** 64n - 1n));
    expect(millisFromNanoString('000000001700000000123456789')).toBe(1_700_000_000_123.456);
    expect(millisFromNanoString('0000')).toBe(0);
  });

  it('encodes whole microseconds back to the same nanoseconds', () => {
    for (const micros of [0, 1, 999_999, 4_294_967_296, 1_700_000_000_123_456, 4_102_444_800_999_999]) {
      const { low, high } = nanoHalvesFromMicros(micros);
      expect(BigInt(high) * 2n ** 32n + BigInt(low)).toBe(BigInt(micros) * 1000n);
      expect(nanoStringFromMicros(micros)).toBe(String(BigInt(micros) * 1000n));
      expect(millisFromNanoHalves(low, high)).toBe(micros / 1000);
    }
  });

  it('round-trips every microsecond time through the encoders', () => {
    for (let i = 0; i < 2000; i++) {
      const millis = (1_700_000_000_000_000 + i * 7919) / 1000;
      const { low, high } = nanoHalvesFromMicros(microsFromMillis(millis));
      expect(millisFromNanoHalves(low, high)).toBe(millis);
    }
  });

  it('refuses times it cannot send', () => {
    expect(() => microsFromMillis(-1)).toThrow(RangeError);
    expect(() => microsFromMillis(Number.NaN)).toThrow(RangeError);
    expect(() => microsFromMillis(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });
});
