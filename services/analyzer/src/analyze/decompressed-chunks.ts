import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { isKeyscopeError, KeyscopeError } from '@keyscope/errors';
import { ANALYZE_BAD_COMPRESSION, ANALYZE_INPUT_UNREADABLE, ANALYZE_TRUNCATED } from './analyze-errors.ts';
import { systemMessage } from './input-files.ts';

/** How far one input got: filled in while its chunks are read. */
export interface ByteCounter {
  /** Read from disk (or stdin) so far, before decompression: what progress is measured in. */
  rawBytes: number;
  /** The input turned out to be gzip: offsets in it count decompressed bytes. */
  gzip: boolean;
}

const GZIP_MAGIC_0 = 0x1f;
const GZIP_MAGIC_1 = 0x8b;
/** Larger than zlib's 16 KiB default: fewer, larger chunks for the line splitter to scan. */
const GUNZIP_CHUNK_BYTES = 256 * 1024;

/**
 * The bytes of one input, gunzipped when they start with the gzip magic bytes. Neither a protobuf
 * request (0x1f would be field 3 with the invalid wire type 7) nor JSON can start with them, so
 * sniffing never mistakes data for gzip. Concatenated gzip members (`cat a.gz b.gz`) read as one.
 *
 * Streams: holds at most a chunk or two. Fails with a KeyscopeError: ANALYZE_TRUNCATED when the
 * gzip stream stops early, ANALYZE_BAD_COMPRESSION when it is corrupt or a `.gz` file is not
 * gzip, ANALYZE_INPUT_UNREADABLE on an I/O error. Messages do not name the file: the caller does.
 */
export async function* decompressedChunks(
  raw: AsyncIterable<Buffer>,
  gzipSuffix: boolean,
  counter: ByteCounter,
): AsyncGenerator<Buffer> {
  const iterator = raw[Symbol.asyncIterator]();
  try {
    let head: Buffer = Buffer.alloc(0);
    while (head.length < 2) {
      const next = await iterator.next();
      if (next.done) break;
      counter.rawBytes += next.value.length;
      head = head.length === 0 ? next.value : Buffer.concat([head, next.value]);
    }
    const gzip = head.length >= 2 && head[0] === GZIP_MAGIC_0 && head[1] === GZIP_MAGIC_1;
    counter.gzip = gzip;
    if (!gzip) {
      if (gzipSuffix) {
        throw head.length === 0
          ? new KeyscopeError(
              ANALYZE_TRUNCATED,
              'gzip data must start with a gzip header, received an empty file',
            )
          : new KeyscopeError(
              ANALYZE_BAD_COMPRESSION,
              `a .gz file must start with the gzip magic bytes 1f 8b, received ${hexOf(head.subarray(0, 2))}`,
            );
      }
      if (head.length > 0) yield head;
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        counter.rawBytes += next.value.length;
        yield next.value;
      }
      return;
    }
    yield* gunzipped(head, iterator, counter);
  } catch (error) {
    throw asInputError(error, counter);
  } finally {
    // Stops the underlying read (and closes the file) when the caller stops early.
    await iterator.return?.();
  }
}

async function* gunzipped(
  head: Buffer,
  rest: AsyncIterator<Buffer>,
  counter: ByteCounter,
): AsyncGenerator<Buffer> {
  async function* compressed() {
    yield head;
    for (let next = await rest.next(); !next.done; next = await rest.next()) {
      counter.rawBytes += next.value.length;
      yield next.value;
    }
  }
  const gunzip = createGunzip({ chunkSize: GUNZIP_CHUNK_BYTES });
  // Errors on either side destroy both, so the loop below sees a read error as well as a zlib one.
  const piping = pipeline(Readable.from(compressed(), { objectMode: false }), gunzip);
  piping.catch(() => {});
  try {
    for await (const chunk of gunzip) yield chunk as Buffer;
    await piping;
  } finally {
    gunzip.destroy();
  }
}

function asInputError(error: unknown, counter: ByteCounter): unknown {
  if (isKeyscopeError(error)) return error;
  const code = (error as NodeJS.ErrnoException).code ?? '';
  // zlib says "unexpected end of file" when the data stops before the member's trailer.
  if (code === 'Z_BUF_ERROR') {
    return new KeyscopeError(
      ANALYZE_TRUNCATED,
      `gzip data must end with a gzip trailer, received ${counter.rawBytes} compressed bytes that stop early`,
      { cause: error },
    );
  }
  if (code.startsWith('Z_') || code.startsWith('ERR_ZLIB')) {
    return new KeyscopeError(
      ANALYZE_BAD_COMPRESSION,
      `gzip data must be valid, received corrupt data within the first ${counter.rawBytes} compressed bytes (${(error as Error).message})`,
      { cause: error },
    );
  }
  if (code.startsWith('E')) {
    return new KeyscopeError(ANALYZE_INPUT_UNREADABLE, `cannot be read: ${systemMessage(error)}`, {
      cause: error,
    });
  }
  return error;
}

function hexOf(bytes: Uint8Array): string {
  return [...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join(' ');
}
