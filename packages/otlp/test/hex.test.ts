import { describe, expect, it } from 'vitest';
import { bytesOfHex, hexOf, hexOf8, hexOf16 } from '../src/hex.ts';

describe('hex', () => {
  const bytes = Uint8Array.from({ length: 40 }, (_, i) => (i * 37 + 5) & 0xff);

  it('writes lowercase hex matching Buffer for 8 and 16 bytes at any offset', () => {
    for (let at = 0; at + 16 <= bytes.length; at++) {
      expect(hexOf8(bytes, at)).toBe(Buffer.from(bytes.subarray(at, at + 8)).toString('hex'));
      expect(hexOf16(bytes, at)).toBe(Buffer.from(bytes.subarray(at, at + 16)).toString('hex'));
    }
    expect(hexOf(Uint8Array.from([0, 15, 16, 255]))).toBe('000f10ff');
  });

  it('reads hex in either case and refuses anything else', () => {
    expect(bytesOfHex('00fFa0')).toEqual(Uint8Array.from([0, 255, 160]));
    expect(bytesOfHex('')).toEqual(new Uint8Array(0));
    expect(bytesOfHex('abc')).toBeNull();
    expect(bytesOfHex('zz')).toBeNull();
    expect(bytesOfHex('0g')).toBeNull();
  });
});
