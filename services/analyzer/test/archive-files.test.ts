import {
  fstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArchiveFiles, type ArchiveFilesOptions } from '../src/receivers/archive-files.ts';

let dir: string;
let clock: number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-archive-files-'));
  clock = Date.parse('2026-06-02T09:00:00Z');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function files(options: Partial<ArchiveFilesOptions> = {}): ArchiveFiles {
  return new ArchiveFiles({
    dir,
    maxBytes: 1024 * 1024,
    fileBytes: 1024,
    fileMillis: 60_000,
    now: () => clock,
    ...options,
  });
}

/** A gzip member of one JSON line, about `bytes` long compressed (random text does not shrink). */
function member(line: number, bytes = 300): Buffer {
  let text = '';
  let seed = line + 1;
  while (text.length < bytes) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    text += seed.toString(36);
  }
  return gzipSync(`{"line":${line},"pad":"${text.slice(0, bytes)}"}\n`);
}

const names = () => readdirSync(dir).sort();
const finished = () => names().filter((name) => name.endsWith('.jsonl.gz'));
const linesOf = (name: string) =>
  gunzipSync(readFileSync(join(dir, name)))
    .toString()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { line: number }).line);

describe('ArchiveFiles', () => {
  it('writes under a .partial name and renames the file to .jsonl.gz when finished', () => {
    const archive = files();
    archive.append(member(1));
    expect(finished()).toEqual([]);
    expect(names()).toHaveLength(1);
    expect(names()[0]).toMatch(/^traces-2026-06-02T09-00-00-000Z-000001\.jsonl\.gz\.partial$/);
    archive.finish();
    expect(names()).toEqual(['traces-2026-06-02T09-00-00-000Z-000001.jsonl.gz']);
    expect(linesOf(names()[0]!)).toEqual([1]);
  });

  it('starts a new file before a member would take the open one past fileBytes, members readable as one gzip stream', () => {
    const archive = files({ fileBytes: 1000 });
    for (let line = 0; line < 7; line++) archive.append(member(line));
    archive.finish();
    const written = finished();
    expect(written.length).toBeGreaterThanOrEqual(3);
    for (const name of written) expect(statSync(join(dir, name)).size).toBeLessThanOrEqual(1000);
    expect(written.flatMap(linesOf)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(archive.counts().finishedFiles).toBe(written.length);
  });

  it('finishes a file once it has been open for fileMillis, not before', () => {
    const archive = files({ fileMillis: 10_000 });
    archive.append(member(1));
    clock += 9_999;
    archive.finishIfOlder();
    expect(finished()).toEqual([]);
    clock += 1;
    archive.finishIfOlder();
    expect(finished()).toHaveLength(1);
    archive.append(member(2));
    expect(names()).toHaveLength(2);
  });

  it('deletes the oldest files so that the archive stays within maxBytes, and counts them', () => {
    const archive = files({ maxBytes: 2500, fileBytes: 700 });
    for (let line = 0; line < 20; line++) {
      archive.append(member(line));
      clock += 1;
      const counts = archive.counts();
      expect(counts.diskBytes).toBeLessThanOrEqual(2500);
      const onDisk = names().reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
      expect(counts.diskBytes).toBe(onDisk);
    }
    archive.finish();
    const kept = finished().flatMap(linesOf);
    // The newest lines are kept, in order; the oldest went.
    expect(kept.at(-1)).toBe(19);
    expect(kept[0]).toBeGreaterThan(0);
    expect(kept).toEqual(Array.from({ length: kept.length }, (_, i) => kept[0]! + i));
    expect(archive.counts().deletedFiles).toBeGreaterThan(0);
  });

  it('takes over the files already in the folder: they count towards maxBytes, a .partial is finished', () => {
    const first = files();
    first.append(member(1));
    first.finish();
    first.append(member(2));
    // The process is killed: its open file stays .partial.
    expect(names().filter((name) => name.endsWith('.partial'))).toHaveLength(1);
    writeFileSync(join(dir, 'notes.txt'), 'not the archive');

    clock += 1000;
    const second = files();
    expect(names().filter((name) => name.endsWith('.partial'))).toEqual([]);
    expect(finished().flatMap(linesOf)).toEqual([1, 2]);
    expect(second.counts().diskBytes).toBe(
      finished().reduce((sum, name) => sum + statSync(join(dir, name)).size, 0),
    );
    second.append(member(3));
    second.finish();
    expect(finished().flatMap(linesOf)).toEqual([1, 2, 3]);
    expect(names()).toContain('notes.txt');
  });

  it('throws the file system error when the folder is gone, and writes again once it is back', () => {
    const archive = files({ fileBytes: 400 });
    archive.append(member(1));
    rmSync(dir, { recursive: true, force: true });
    // The open file cannot be finished, nor a new one opened.
    expect(() => archive.append(member(2))).toThrow(/ENOENT/);
    expect(() => archive.append(member(3))).toThrow(/ENOENT/);
    mkdirSync(dir);
    archive.append(member(4));
    archive.finish();
    expect(finished().flatMap(linesOf)).toEqual([4]);
  });

  it('syncs a file each time it grows by syncBytes, and once more before its finished name appears', () => {
    const syncs: { bytes: number; names: string[] }[] = [];
    const archive = files({
      fileBytes: 100_000,
      syncBytes: 1000,
      sync: (fd) => syncs.push({ bytes: fstatSync(fd).size, names: names() }),
    });
    for (let line = 0; line < 7; line++) archive.append(member(line));
    // ~330 bytes a member: a sync after the 4th (past 1000 bytes since the start), none since.
    expect(syncs).toHaveLength(1);
    expect(syncs[0]!.bytes).toBeGreaterThanOrEqual(1000);
    expect(syncs[0]!.bytes).toBeLessThan(1400);
    archive.finish();
    expect(syncs).toHaveLength(2);
    // The last sync saw the whole file, still under its .partial name.
    expect(syncs[1]!.bytes).toBe(statSync(join(dir, finished()[0]!)).size);
    expect(syncs[1]!.names).toEqual([`${finished()[0]}.partial`]);
    expect(linesOf(finished()[0]!)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('cuts the file back to its last whole member when a sync fails, and counts it towards maxBytes', () => {
    let failing = false;
    const archive = files({
      fileBytes: 100_000,
      syncBytes: 1,
      sync: () => {
        if (failing) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      },
    });
    archive.append(member(1));
    archive.append(member(2));
    failing = true;
    expect(() => archive.append(member(3))).toThrow(/EIO/);
    // Finished although its last sync failed: it holds the members written before, and its bytes count.
    expect(finished().flatMap(linesOf)).toEqual([1, 2]);
    expect(archive.counts().diskBytes).toBe(statSync(join(dir, finished()[0]!)).size);
    failing = false;
    archive.append(member(4));
    archive.finish();
    expect(finished().flatMap(linesOf)).toEqual([1, 2, 4]);
  });
});
