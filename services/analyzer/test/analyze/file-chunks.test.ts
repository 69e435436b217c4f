import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileChunks } from '../../src/analyze/file-chunks.ts';

const dir = mkdtempSync(join(tmpdir(), 'keyscope-file-chunks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function fileWith(bytes: Buffer): string {
  const path = join(dir, `${randomBytes(4).toString('hex')}.pb`);
  writeFileSync(path, bytes);
  return path;
}

async function all(chunks: AsyncIterable<Buffer>): Promise<Buffer[]> {
  const kept: Buffer[] = [];
  for await (const chunk of chunks) kept.push(chunk);
  return kept;
}

const openFiles = () => readdirSync('/proc/self/fd').length;

describe('fileChunks', () => {
  it('reads a file larger than one chunk completely, in order, in chunks the reader may keep', async () => {
    const bytes = randomBytes(300 * 1024);
    const chunks = await all(fileChunks(fileWith(bytes), 128 * 1024));
    expect(chunks.map((chunk) => chunk.length)).toEqual([128 * 1024, 128 * 1024, 44 * 1024]);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
  });

  it('reads an empty file as no chunks', async () => {
    expect(await all(fileChunks(fileWith(Buffer.alloc(0)), 1024))).toEqual([]);
  });

  it('rejects with the file system error for a file that is not there', async () => {
    await expect(all(fileChunks(join(dir, 'missing.pb'), 1024))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('closes the file when the reader stops early', async () => {
    const path = fileWith(randomBytes(64 * 1024));
    const before = openFiles();
    const chunks = fileChunks(path, 1024);
    await chunks.next();
    expect(openFiles()).toBe(before + 1);
    await chunks.return(undefined);
    expect(openFiles()).toBe(before);
  });
});
