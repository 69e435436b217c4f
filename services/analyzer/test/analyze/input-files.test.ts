import { symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatOfName, listInputs } from '../../src/analyze/input-files.ts';
import { temporaryFolder, writeInput } from './simulated-archive.ts';

describe('formatOfName', () => {
  it.each([
    ['export.pb', { format: 'protobuf', gzipSuffix: false }],
    ['export.PB.GZ', { format: 'protobuf', gzipSuffix: true }],
    ['export.json', { format: 'json', gzipSuffix: false }],
    ['traces-2025-06-02T09-00-31.123.json.gz', { format: 'json', gzipSuffix: true }],
    ['export.jsonl', { format: 'jsonl', gzipSuffix: false }],
    ['logs/v1.2/export.jsonl.gz', { format: 'jsonl', gzipSuffix: true }],
    ['export.txt', undefined],
    ['export.gz', undefined],
    ['export', undefined],
  ])('reads %s as %j', (name, expected) => {
    expect(formatOfName(name)).toEqual(expected);
  });
});

describe('listInputs', () => {
  it('walks folders recursively in code-point order and lists other files as skipped', async () => {
    const dir = temporaryFolder();
    for (const name of ['b.jsonl', 'a/z.pb', 'a/b/c.json.gz', 'B.json', 'a.txt', 'a/notes.md']) {
      writeInput(join(dir, name), '{}');
    }
    const listing = await listInputs([dir]);
    expect(listing.inputs.map((input) => input.path)).toEqual([
      join(dir, 'B.json'),
      join(dir, 'a/b/c.json.gz'),
      join(dir, 'a/z.pb'),
      join(dir, 'b.jsonl'),
    ]);
    expect(listing.inputs[1]).toMatchObject({
      format: 'json',
      gzipSuffix: true,
      sizeBytes: 22,
      stdin: false,
    });
    expect(listing.skipped.map((s) => s.path)).toEqual([join(dir, 'a/notes.md'), join(dir, 'a.txt')]);
    expect(listing.unreadable).toEqual([]);
  });

  it('keeps the order of the paths given, and lists a file reached twice once', async () => {
    const dir = temporaryFolder();
    const second = writeInput(join(dir, 'second.pb'), 'x');
    const first = writeInput(join(dir, 'sub', 'first.pb'), 'x');
    symlinkSync(first, join(dir, 'link.pb'));
    const listing = await listInputs([first, dir, second]);
    expect(listing.inputs.map((input) => input.path)).toEqual([first, second]);
  });

  it('does not loop on a symlink to a parent folder', async () => {
    const dir = temporaryFolder();
    writeInput(join(dir, 'a', 'x.jsonl'), '{}');
    symlinkSync(dir, join(dir, 'a', 'up'));
    const listing = await listInputs([dir]);
    expect(listing.inputs.map((input) => input.path)).toEqual([join(dir, 'a', 'x.jsonl')]);
  });

  it('reports a missing path as unreadable and reads - as JSON lines on stdin', async () => {
    const missing = join(temporaryFolder(), 'nope.pb');
    const listing = await listInputs([missing, '-', '-']);
    expect(listing.unreadable).toEqual([{ path: missing, message: 'no such file or directory' }]);
    expect(listing.inputs).toEqual([
      { path: 'stdin', format: 'jsonl', gzipSuffix: false, sizeBytes: null, stdin: true },
    ]);
  });
});
