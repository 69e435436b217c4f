import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTraces } from '@keyscope/otlp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultServeConfig } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { PayloadArchive } from '../src/receivers/payload-archive.ts';
import { wholePayload } from '../src/receivers/payload-bytes.ts';
import { executedTwice } from './settings/configured-keyscope.ts';

let dir: string;
let lines: string[];
const logger: Logger = { info: (line) => lines.push(line), error: (line) => lines.push(line) };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-payload-archive-'));
  lines = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function archiveWith(payloads: number): Promise<PayloadArchive> {
  const archive = await PayloadArchive.start({ ...defaultServeConfig().archive, path: dir }, logger);
  // Many spans a payload, so that writing them all takes the thread a while.
  const spans = Array.from({ length: 100 }, (_, i) => executedTwice(`key-${i}`)).flat();
  const bytes = encodeTraces(spans);
  for (let i = 0; i < payloads; i++) {
    archive.append({
      signal: 'traces',
      encoding: 'protobuf',
      bytes: wholePayload(bytes),
      compressedBytes: 0,
    });
  }
  return archive;
}

describe('PayloadArchive', () => {
  it('writes every queued payload and finishes its file when stopped in time', async () => {
    const archive = await archiveWith(20);
    await archive.stop(30_000);
    expect(archive.counts()).toMatchObject({ payloads: 20, queuedBytes: 0 });
    expect(archive.counts().failures).toEqual({ write_failed: 0, queue_full: 0, unencodable: 0 });
    expect(readdirSync(dir).every((name) => name.endsWith('.jsonl.gz'))).toBe(true);
  });

  it('counts what it had not written as write_failed when stopping takes longer than its timeout', async () => {
    const archive = await archiveWith(40);
    await archive.stop(1);
    const { payloads, failures } = archive.counts();
    expect(failures.write_failed).toBeGreaterThan(0);
    expect(payloads + failures.write_failed).toBe(40);
    expect(lines.filter((line) => line.includes('shutdown.drainTimeoutMillis'))).toHaveLength(1);
  });
});
