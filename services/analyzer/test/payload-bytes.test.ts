import { describe, expect, it } from 'vitest';
import { chunkedPayload, ScratchBuffer, wholePayload } from '../src/receivers/payload-bytes.ts';

const bytesOf = (text: string) => Buffer.from(text);
const copyOf = (bytes: Uint8Array) => Buffer.from(bytes).toString();

describe('payload bytes', () => {
  it('joins chunks in the order they arrived', () => {
    const scratch = new ScratchBuffer();
    const payload = chunkedPayload([bytesOf('ab'), bytesOf('cde'), bytesOf('f')], 6, scratch);
    expect(payload.byteLength).toBe(6);
    expect(payload.read(copyOf)).toBe('abcdef');
  });

  it('reuses one buffer for later payloads, showing each only its own bytes', () => {
    const scratch = new ScratchBuffer();
    const large = Buffer.alloc(200 * 1024, 'x');
    const first = chunkedPayload(
      [large.subarray(0, 100 * 1024), large.subarray(100 * 1024)],
      large.length,
      scratch,
    );
    expect(first.read((bytes) => bytes.length)).toBe(large.length);
    const capacity = scratch.capacityBytes;
    expect(capacity).toBeGreaterThanOrEqual(large.length);
    const second = chunkedPayload([bytesOf('12'), bytesOf('34')], 4, scratch);
    expect(second.read(copyOf)).toBe('1234');
    expect(scratch.capacityBytes).toBe(capacity);
  });

  it('hands a single chunk over without copying it', () => {
    const chunk = bytesOf('whole');
    expect(chunkedPayload([chunk], chunk.length, new ScratchBuffer()).read((bytes) => bytes === chunk)).toBe(
      true,
    );
    expect(wholePayload(chunk).read((bytes) => bytes === chunk)).toBe(true);
  });

  it('gives a nested read its own buffer instead of overwriting the outer one', () => {
    const scratch = new ScratchBuffer();
    const outer = chunkedPayload([bytesOf('out'), bytesOf('er')], 5, scratch);
    const inner = chunkedPayload([bytesOf('in'), bytesOf('ner')], 5, scratch);
    const seen = outer.read((outerBytes) => {
      const innerText = inner.read(copyOf);
      return [copyOf(outerBytes), innerText];
    });
    expect(seen).toEqual(['outer', 'inner']);
  });

  it('refuses chunks that do not add up to the stated size', () => {
    const payload = chunkedPayload([bytesOf('abc'), bytesOf('d')], 3, new ScratchBuffer());
    expect(() => payload.read(copyOf)).toThrow(RangeError);
  });
});
