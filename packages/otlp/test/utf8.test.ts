import { describe, expect, it } from 'vitest';
import { OTLP_UTF8 } from '../src/errors.ts';
import { decodeUtf8 } from '../src/utf8.ts';
import { expectCode } from './support/expect-code.ts';

/** `text`'s UTF-8 between other bytes, in a Node Buffer and in a plain Uint8Array. */
function placed(text: string | Uint8Array) {
  const bytes = typeof text === 'string' ? Buffer.from(text) : Buffer.from(text);
  const buffer = Buffer.concat([Buffer.from('before'), bytes, Buffer.from('after')]);
  return { buffer, plain: new Uint8Array(buffer), start: 6, end: 6 + bytes.length };
}

describe('strict UTF-8 decoding', () => {
  it('decodes short and long, ASCII and multi-byte text from Buffers and plain arrays alike', () => {
    const texts = [
      '',
      'POST',
      '0df91258-66ec-4f59-a4d1-42d6382c23ca',
      'payments-idem@shop.payments-pr4vtfkh6r-c4sdt.payments',
      'x'.repeat(1000),
      'société-nœud-東京-🚀-'.repeat(5),
      `${'a'.repeat(40)}é`,
    ];
    for (const text of texts) {
      const { buffer, plain, start, end } = placed(text);
      expect(decodeUtf8(buffer, start, end)).toBe(text);
      expect(decodeUtf8(plain, start, end)).toBe(text);
    }
  });

  it('refuses invalid UTF-8 at any length, also when the rest of the text is ASCII', () => {
    for (const length of [4, 31, 33, 64, 500]) {
      const bytes = Buffer.alloc(length, 0x61);
      bytes[length >> 1] = 0xff;
      const { buffer, plain, start, end } = placed(bytes);
      expectCode(() => decodeUtf8(buffer, start, end), OTLP_UTF8);
      expectCode(() => decodeUtf8(plain, start, end), OTLP_UTF8);
    }
    // A lone surrogate encoded in three bytes (CESU-8): no valid UTF-8 holds one.
    const surrogate = Buffer.concat([Buffer.alloc(40, 0x61), Buffer.from([0xed, 0xa0, 0x80])]);
    const { buffer, start, end } = placed(surrogate);
    expectCode(() => decodeUtf8(buffer, start, end), OTLP_UTF8);
  });
});
