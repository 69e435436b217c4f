import { describe, expect, it } from 'vitest';
import type { InputFormat } from '../../src/analyze/input-files.ts';
import { type InputItem, readRecords } from '../../src/analyze/record-reader.ts';

async function* chunksOf(text: string, size = 5): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function items(format: InputFormat, text: string, maxRecordBytes = 1000) {
  const out: Record<string, unknown>[] = [];
  for await (const item of readRecords(format, chunksOf(text), maxRecordBytes)) {
    if (item.kind === 'record') {
      const { bytes, ...rest } = item;
      out.push({ ...rest, text: bytes.toString() });
    } else {
      const { error, ...rest } = item;
      out.push({ ...rest, code: error.code });
    }
  }
  return out;
}

describe('readRecords', () => {
  it('reads a .pb file as one record', async () => {
    expect(await items('protobuf', 'abcdefghijkl')).toEqual([
      {
        kind: 'record',
        encoding: 'protobuf',
        text: 'abcdefghijkl',
        offsetBytes: 0,
        line: null,
        unterminated: false,
      },
    ]);
  });

  it('refuses a .pb file over the limit without reading it all', async () => {
    expect(await items('protobuf', 'x'.repeat(50), 12)).toEqual([
      { kind: 'bad', code: 'KS_ANALYZE_RECORD_TOO_LARGE', offsetBytes: 0, line: null, fatal: true },
    ]);
  });

  it('reads JSON lines one record per line, skipping blank ones', async () => {
    const records = await items('jsonl', '{"a":1}\r\n\n  \n{"b":2}\n{"c":3}');
    expect(
      records.map(({ text, offsetBytes, line, unterminated }) => [text, offsetBytes, line, unterminated]),
    ).toEqual([
      ['{"a":1}\r', 0, 1, false],
      ['{"b":2}', 13, 4, false],
      ['{"c":3}', 21, 5, true],
    ]);
  });

  it('skips a JSON line over the limit as a bad record and goes on', async () => {
    const records = await items('jsonl', `{"a":1}\n${'x'.repeat(30)}\n{"b":2}\n`, 20);
    expect(records.map((r) => [r.kind, r.line, r.code ?? r.text])).toEqual([
      ['record', 1, '{"a":1}'],
      ['bad', 2, 'KS_ANALYZE_RECORD_TOO_LARGE'],
      ['record', 3, '{"b":2}'],
    ]);
  });

  it('reads a pretty-printed .json file as one document', async () => {
    const text = '{\n  "resourceSpans": []\n}\n';
    // Blank lines before the document are whitespace to JSON: they are dropped.
    expect(await items('json', `\n${text}`)).toEqual([
      { kind: 'record', encoding: 'json', text, offsetBytes: 0, line: null, unterminated: false },
    ]);
  });

  it('reads a .json file whose first line is a whole JSON value as JSON lines, as the Collector writes it', async () => {
    const records = await items('json', '{"resourceSpans":[]}\n{"resourceSpans":[]}\n');
    expect(records.map((r) => [r.line, r.offsetBytes])).toEqual([
      [1, 0],
      [2, 21],
    ]);
  });

  it('refuses a .json document over the limit', async () => {
    const records = await items('json', `{\n${'  "x": 1,\n'.repeat(20)}}`, 50);
    expect(records).toEqual([
      { kind: 'bad', code: 'KS_ANALYZE_RECORD_TOO_LARGE', offsetBytes: 0, line: null, fatal: true },
    ]);
  });

  it('ends the input with a fatal item at the line a stream error hit', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"a":1}\n{"b":');
      const { KeyscopeError } = await import('@keyscope/errors');
      const { ANALYZE_TRUNCATED } = await import('../../src/analyze/analyze-errors.ts');
      throw new KeyscopeError(ANALYZE_TRUNCATED, 'cut');
    }
    const out: InputItem[] = [];
    for await (const item of readRecords('jsonl', failing(), 100)) out.push(item);
    expect(out.map((item) => [item.kind, item.offsetBytes, item.line])).toEqual([
      ['record', 0, 1],
      ['bad', 8, 2],
    ]);
    expect(out[1]).toMatchObject({ fatal: true, error: { code: 'KS_ANALYZE_TRUNCATED' } });
  });
});
