import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/**
 * The bytes of a file in chunks of at most `chunkBytes`, read synchronously.
 *
 * `keyscope analyze` reads archives that are mostly in the page cache, one file after another.
 * Through a read stream every open, read and close is a round trip to libuv's thread pool, and
 * the main thread sat idle for a quarter of a run over a folder of request-sized .pb files;
 * reading in place keeps it busy. Each chunk is a buffer of its own (sized to what is left of the
 * file), so a consumer may keep it.
 */
export async function* fileChunks(path: string, chunkBytes: number): AsyncGenerator<Buffer> {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    let position = 0;
    for (;;) {
      // A file that grows while it is read is read to its new end: one byte more than the stat
      // said detects that, and later chunks are full-size.
      const wanted = Math.min(chunkBytes, Math.max(size - position + 1, 64 * 1024));
      const chunk = Buffer.allocUnsafe(wanted);
      const read = readSync(fd, chunk, 0, wanted, position);
      if (read === 0) return;
      position += read;
      yield read === wanted ? chunk : chunk.subarray(0, read);
    }
  } finally {
    closeSync(fd);
  }
}
