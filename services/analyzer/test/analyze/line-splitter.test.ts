import { describe, expect, it } from 'vitest';
import { type Line, LineSplitter } from '../../src/analyze/line-splitter.ts';

async function* chunksOf(...parts: string[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield Buffer.from(part);
}

async function split(maxLineBytes: number, ...parts: string[]) {
  const lines: (Omit<Line, 'bytes'> & { text: string })[] = [];
  for await (const { bytes, ...line } of new LineSplitter(maxLineBytes).lines(chunksOf(...parts))) {
    lines.push({ ...line, text: bytes.toString() });
  }
  return lines;
}

describe('LineSplitter', () => {
  it('numbers lines and gives each its starting byte offset, across chunk boundaries', async () => {
    const lines = await split(100, '{"a"', ':1}\n{"b":2}\n', '\n{"c"', ':3}\n');
    expect(lines.map(({ text, offsetBytes, number }) => [text, offsetBytes, number])).toEqual([
      ['{"a":1}', 0, 1],
      ['{"b":2}', 8, 2],
      ['', 16, 3],
      ['{"c":3}', 17, 4],
    ]);
    expect(lines.every((line) => line.terminated && !line.oversized)).toBe(true);
  });

  it('counts offsets in bytes, not characters', async () => {
    const lines = await split(100, '{"k":"é"}\n{"k":1}\n');
    expect(lines[1]!.offsetBytes).toBe(Buffer.byteLength('{"k":"é"}\n'));
  });

  it('yields a last line without a newline as unterminated', async () => {
    const lines = await split(100, 'one\ntw', 'o');
    expect(lines.map(({ text, terminated }) => [text, terminated])).toEqual([
      ['one', true],
      ['two', false],
    ]);
  });

  it('yields nothing after a final newline', async () => {
    expect(await split(100, 'one\n')).toHaveLength(1);
  });

  it('drops the bytes of a line over the limit but reads on after it', async () => {
    const lines = await split(5, 'short\nmuch too ', 'long\nok\n');
    expect(
      lines.map(({ text, oversized, lengthBytes, number }) => [text, oversized, lengthBytes, number]),
    ).toEqual([
      ['short', false, 5, 1],
      ['', true, 13, 2],
      ['ok', false, 2, 3],
    ]);
    expect(lines[2]!.offsetBytes).toBe(20);
  });

  it('says where it was when the stream fails', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('one\ntwo\nthr');
      throw new Error('disk gone');
    }
    const splitter = new LineSplitter(100);
    const seen: string[] = [];
    await expect(async () => {
      for await (const line of splitter.lines(failing())) seen.push(line.bytes.toString());
    }).rejects.toThrow('disk gone');
    expect(seen).toEqual(['one', 'two']);
    expect(splitter.position()).toEqual({ offsetBytes: 8, line: 3, endBytes: 11 });
  });
});
