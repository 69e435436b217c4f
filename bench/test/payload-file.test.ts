import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readPayloadFile, writePayloadFile } from '../payload-file.ts';

describe('payload files', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('hands the load generator the bodies it was given, in order and whole', () => {
    dir = mkdtempSync(join(tmpdir(), 'payload-file-'));
    const file = join(dir, 'payloads.bin');
    const bodies = [new Uint8Array([1, 2, 3]), new Uint8Array(0), new Uint8Array(70_000).fill(7)];
    writePayloadFile(file, bodies);
    expect(readFileSync(file).byteLength).toBe(3 * 4 + 3 + 70_000);
    expect(readPayloadFile(file).map((body) => [...body])).toEqual(bodies.map((body) => [...body]));
  });

  it('refuses a file whose last body is cut short', () => {
    dir = mkdtempSync(join(tmpdir(), 'payload-file-'));
    const file = join(dir, 'payloads.bin');
    writePayloadFile(file, [new Uint8Array([1, 2, 3]), new Uint8Array([4, 5, 6])]);
    writeFileSync(file, readFileSync(file).subarray(0, 12));
    expect(() => readPayloadFile(file)).toThrow(/truncated: a body of 3 bytes at offset 7/);
  });
});
