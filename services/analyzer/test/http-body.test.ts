import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { isKeyscopeError } from '@keyscope/errors';
import { gzipBomb } from '@keyscope/testkit/wire';
import { describe, expect, it } from 'vitest';
import {
  ANALYZER_BAD_COMPRESSION,
  ANALYZER_BODY_TIMEOUT,
  ANALYZER_BODY_TOO_LARGE,
  ANALYZER_SATURATED,
} from '../src/errors.ts';
import { BufferedBodies } from '../src/receivers/buffered-bodies.ts';
import { RequestAbortedError, readRequestBody } from '../src/receivers/http-body.ts';

const KIB = 1024;

function chunked(bytes: Buffer, chunkBytes = 4 * KIB): Readable {
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; offset += chunkBytes)
    chunks.push(bytes.subarray(offset, offset + chunkBytes));
  return Readable.from(chunks, { objectMode: false });
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isKeyscopeError(error)) throw new Error(`expected a KeyscopeError, got ${String(error)}`);
  return error.code;
}

describe('readRequestBody', () => {
  it('reads an identity body and reports its size', async () => {
    const body = Buffer.from('x'.repeat(10 * KIB));
    const read = await readRequestBody(chunked(body), 'identity', 10 * KIB);
    expect(Buffer.concat(read.chunks).equals(body)).toBe(true);
    expect(read.compressedBytes).toBe(10 * KIB);
  });

  it('inflates a gzip body and reports both sizes', async () => {
    const body = Buffer.from('span '.repeat(4 * KIB));
    const compressed = gzipSync(body);
    const read = await readRequestBody(chunked(compressed, 100), 'gzip', body.length);
    expect(Buffer.concat(read.chunks).equals(body)).toBe(true);
    expect(read.compressedBytes).toBe(compressed.length);
  });

  it('reads an empty body as zero bytes', async () => {
    const read = await readRequestBody(Readable.from([]), 'identity', 10);
    expect(read.byteLength).toBe(0);
    expect(read.chunks).toEqual([]);
  });

  it('refuses an identity body one byte over the limit', async () => {
    const code = await codeOf(readRequestBody(chunked(Buffer.alloc(KIB + 1)), 'identity', KIB));
    expect(code).toBe(ANALYZER_BODY_TOO_LARGE.code);
  });

  it('refuses a small gzip body that inflates past the limit', async () => {
    const body = gzipBomb(4);
    expect(body.length).toBeLessThan(64 * KIB);
    const code = await codeOf(readRequestBody(chunked(body), 'gzip', 64 * KIB));
    expect(code).toBe(ANALYZER_BODY_TOO_LARGE.code);
  });

  it('stops inflating a 512 MiB gzip bomb at the limit instead of allocating it', async () => {
    const body = gzipBomb(512);
    const before = process.memoryUsage().arrayBuffers;
    const code = await codeOf(readRequestBody(chunked(body, 64 * KIB), 'gzip', 1024 * KIB));
    expect(code).toBe(ANALYZER_BODY_TOO_LARGE.code);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * KIB);
  });

  it('refuses a gzip body larger than the limit before inflating it', async () => {
    const incompressible = randomBytes(8 * KIB);
    const code = await codeOf(readRequestBody(chunked(gzipSync(incompressible)), 'gzip', 2 * KIB));
    expect(code).toBe(ANALYZER_BODY_TOO_LARGE.code);
  });

  it('refuses a body that is not gzip although declared so', async () => {
    const code = await codeOf(readRequestBody(chunked(Buffer.from('not gzip at all')), 'gzip', KIB));
    expect(code).toBe(ANALYZER_BAD_COMPRESSION.code);
  });

  it('refuses a truncated gzip body', async () => {
    const compressed = gzipSync(Buffer.from('span '.repeat(KIB)));
    const code = await codeOf(
      readRequestBody(chunked(compressed.subarray(0, compressed.length - 10)), 'gzip', 8 * KIB),
    );
    expect(code).toBe(ANALYZER_BAD_COMPRESSION.code);
  });

  it('refuses a body that has not ended within timeoutMillis', async () => {
    const source = new Readable({ read() {} });
    source.push(Buffer.alloc(100));
    const code = await codeOf(readRequestBody(source, 'identity', KIB, { timeoutMillis: 50 }));
    expect(code).toBe(ANALYZER_BODY_TIMEOUT.code);
  });

  it('counts the body in its buffer reservation and refuses it once the buffer is full', async () => {
    const buffered = new BufferedBodies(6 * KIB);
    const other = buffered.open();
    other.add(KIB);
    const refused = buffered.open();
    const code = await codeOf(
      readRequestBody(chunked(Buffer.alloc(8 * KIB)), 'identity', 64 * KIB, { buffer: refused }),
    );
    expect(code).toBe(ANALYZER_SATURATED.code);
    refused.release();
    const reservation = buffered.open();
    await readRequestBody(chunked(Buffer.alloc(4 * KIB)), 'identity', 64 * KIB, { buffer: reservation });
    expect(buffered.heldBytes()).toBe(5 * KIB);
    reservation.release();
    expect(buffered.heldBytes()).toBe(KIB);
  });

  it('reports a request whose connection closed before its body was read as aborted', async () => {
    const source = new Readable({ read() {} });
    source.destroy();
    await expect(readRequestBody(source, 'identity', KIB)).rejects.toBeInstanceOf(RequestAbortedError);
  });

  it('reports a sender that went away mid-body as aborted', async () => {
    const source = new Readable({ read() {} });
    source.push(Buffer.alloc(100));
    const reading = readRequestBody(source, 'identity', KIB);
    source.destroy(new Error('socket hang up'));
    await expect(reading).rejects.toBeInstanceOf(RequestAbortedError);
  });
});
