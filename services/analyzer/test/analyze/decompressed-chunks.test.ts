import { gzipSync } from 'node:zlib';
import { isKeyscopeError } from '@keyscope/errors';
import { describe, expect, it } from 'vitest';
import { type ByteCounter, decompressedChunks } from '../../src/analyze/decompressed-chunks.ts';

async function* pieces(bytes: Uint8Array, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < bytes.length; i += size) yield Buffer.from(bytes.subarray(i, i + size));
}

async function read(bytes: Uint8Array, gzipSuffix: boolean, chunkBytes = 7) {
  const counter: ByteCounter = { rawBytes: 0, gzip: false };
  const out: Buffer[] = [];
  for await (const chunk of decompressedChunks(pieces(bytes, chunkBytes), gzipSuffix, counter))
    out.push(chunk);
  return { text: Buffer.concat(out).toString(), counter };
}

async function failure(bytes: Uint8Array, gzipSuffix: boolean): Promise<string> {
  try {
    await read(bytes, gzipSuffix);
  } catch (error) {
    if (isKeyscopeError(error)) return error.code;
    throw error;
  }
  throw new Error('expected a failure');
}

const TEXT = '{"resourceSpans":[]}\n'.repeat(200);

describe('decompressedChunks', () => {
  it('passes plain bytes through and counts them', async () => {
    expect(await read(Buffer.from(TEXT), false)).toEqual({
      text: TEXT,
      counter: { rawBytes: TEXT.length, gzip: false },
    });
  });

  it('gunzips by the magic bytes, whatever the name says, and counts compressed bytes', async () => {
    const compressed = gzipSync(TEXT);
    expect(await read(compressed, false)).toEqual({
      text: TEXT,
      counter: { rawBytes: compressed.length, gzip: true },
    });
    expect((await read(compressed, true, 1)).text).toBe(TEXT);
  });

  it('reads concatenated gzip members as one stream', async () => {
    const joined = Buffer.concat([gzipSync('first\n'), gzipSync('second\n')]);
    expect((await read(joined, true)).text).toBe('first\nsecond\n');
  });

  it('refuses a .gz file that does not start with the gzip magic bytes', async () => {
    expect(await failure(Buffer.from(TEXT), true)).toBe('KS_ANALYZE_BAD_COMPRESSION');
  });

  it('refuses an empty .gz file as truncated', async () => {
    expect(await failure(Buffer.alloc(0), true)).toBe('KS_ANALYZE_TRUNCATED');
  });

  it('refuses gzip data cut short as truncated', async () => {
    const compressed = gzipSync(TEXT);
    expect(await failure(compressed.subarray(0, compressed.length - 12), false)).toBe('KS_ANALYZE_TRUNCATED');
  });

  it('refuses corrupt gzip data', async () => {
    const compressed = Buffer.from(gzipSync(TEXT));
    compressed.fill(0xff, 12, 30);
    expect(await failure(compressed, false)).toBe('KS_ANALYZE_BAD_COMPRESSION');
  });

  it('turns a read error into KS_ANALYZE_INPUT_UNREADABLE', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('{}');
      throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
    }
    const counter: ByteCounter = { rawBytes: 0, gzip: false };
    await expect(async () => {
      for await (const _ of decompressedChunks(failing(), false, counter));
    }).rejects.toMatchObject({ code: 'KS_ANALYZE_INPUT_UNREADABLE' });
  });
});
