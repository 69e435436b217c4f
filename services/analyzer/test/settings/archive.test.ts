import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isKeyscopeError } from '@keyscope/errors';
import { createAttributes, encodeLogs, type LogRecord } from '@keyscope/otlp';
import { createTextSink } from '@keyscope/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { runAnalyze } from '../../src/analyze/run-analyze.ts';
import { ANALYZER_ARCHIVE_UNWRITABLE } from '../../src/errors.ts';
import { type ConfiguredKeyscope, executedTwice, startConfigured, until } from './configured-keyscope.ts';

let keyscope: ConfiguredKeyscope | undefined;
afterEach(async () => {
  await keyscope?.stop();
  keyscope = undefined;
});

const archiveOf = (dir: string) => join(dir, 'archive');
const finished = (folder: string) =>
  readdirSync(folder)
    .filter((name) => name.endsWith('.jsonl.gz'))
    .sort();
const diskBytes = (folder: string) =>
  readdirSync(folder).reduce((sum, name) => sum + statSync(join(folder, name)).size, 0);

/** The keys `keyscope analyze --format json <folder>` reports as findings, sorted. */
async function analyzedKeys(folder: string): Promise<string[]> {
  const stdout = createTextSink();
  const code = await runAnalyze(
    { paths: [folder], format: 'json', mappingFile: undefined, keepGoing: false, maxRecordBytes: 1 << 26 },
    { stdout, stderr: createTextSink(), stdin: process.stdin, env: {} },
  );
  expect(code).toBe(0);
  return (JSON.parse(stdout.text()) as { findings: Array<{ key: string }> }).findings
    .map((f) => f.key)
    .sort();
}

async function exportKey(key: string): Promise<void> {
  expect((await keyscope!.exportSpans(executedTwice(key))).status).toBe(200);
}

/** Waits until the archive thread has written `payloads` payloads. */
async function archived(payloads: number): Promise<void> {
  await until(async () => (await keyscope!.metric('keyscope_archive_payloads_total')) >= payloads, 10_000);
}

describe('archive.*', () => {
  it('archive.path: the payloads serve acknowledged are in that folder, and keyscope analyze finds their duplicates there', async () => {
    keyscope = await startConfigured((dir) => ({ env: { KEYSCOPE_ARCHIVE_PATH: archiveOf(dir) } }));
    const folder = archiveOf(keyscope.dir);
    await exportKey('archived-key-1');
    await exportKey('archived-key-2');
    await archived(2);
    // Still being written: a name analyze does not read.
    expect(finished(folder)).toEqual([]);
    await keyscope.running.stop();
    expect(finished(folder)).toHaveLength(1);
    expect(await analyzedKeys(folder)).toEqual(['archived-key-1', 'archived-key-2']);
  });

  it('archive.path: a logs payload is kept as the spans of the decisions its records state', async () => {
    keyscope = await startConfigured((dir) => ({ file: { archive: { path: archiveOf(dir) } } }));
    const now = Date.now();
    const decision = (node: string, offsetMillis: number): LogRecord => ({
      traceId: '',
      spanId: '',
      timeUnixMillis: now - 5_000 + offsetMillis,
      observedTimeUnixMillis: 0,
      severityNumber: 9,
      severityText: 'INFO',
      body: 'idempotency decision',
      eventName: 'idempotency.decision',
      attributes: Object.assign(createAttributes(), {
        'idempotency.key': 'logged-key',
        'idempotency.outcome': 'miss',
        'idempotency.scope': 'node',
        'http.route': '/payments',
      }),
      resource: {
        attributes: Object.assign(createAttributes(), {
          'service.name': 'payments',
          'service.instance.id': node,
        }),
      },
      scope: { name: 'dedup', version: '1' },
    });
    const otlp = keyscope.running.addresses.otlpHttp!;
    const response = await fetch(`http://127.0.0.1:${otlp.port}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: encodeLogs([decision('payments-a', 0), decision('payments-b', 1_000)]),
    });
    expect(response.status).toBe(200);
    await archived(1);
    await keyscope.running.stop();
    expect(await analyzedKeys(archiveOf(keyscope.dir))).toEqual(['logged-key']);
  });

  it('archive.path: off by default, nothing archived', async () => {
    keyscope = await startConfigured({});
    await exportKey('not-archived');
    expect(keyscope.config.archive.path).toBe('');
    expect(keyscope.lines.some((line) => line.startsWith('archiving'))).toBe(false);
    expect(await keyscope.metric('keyscope_archive_payloads_total')).toBe(0);
  });

  it('archive.path: a folder keyscope cannot create stops startup with KS_ANALYZER_ARCHIVE_UNWRITABLE', async () => {
    const failure = await startConfigured((dir) => {
      writeFileSync(join(dir, 'a-file'), '');
      return { file: { archive: { path: join(dir, 'a-file', 'archive') } } };
    }).catch((error: unknown) => error);
    expect(isKeyscopeError(failure) && failure.code).toBe(ANALYZER_ARCHIVE_UNWRITABLE.code);
  });

  it('archive.path: a write that fails is counted and logged once, the sender still gets 200, and archiving resumes', async () => {
    keyscope = await startConfigured((dir) => ({
      file: { archive: { path: archiveOf(dir), fileBytes: 1 } },
    }));
    const folder = archiveOf(keyscope.dir);
    await exportKey('before-1');
    await archived(1);
    rmSync(folder, { recursive: true, force: true });
    await exportKey('lost-1');
    await exportKey('lost-2');
    await until(
      async () =>
        (await keyscope!.metric('keyscope_archive_write_failures_total', { reason: 'write_failed' })) === 2,
      10_000,
    );
    expect(keyscope.lines.filter((line) => line.includes('archive: cannot write'))).toHaveLength(1);
    mkdirSync(folder);
    await exportKey('after-1');
    await archived(2);
    expect(keyscope.lines.some((line) => line.startsWith('archive: writing to'))).toBe(true);
    await keyscope.running.stop();
    expect(await analyzedKeys(folder)).toEqual(['after-1']);
  });

  it('archive.fileBytes: a file is finished before it would pass 1 byte, one request a file', async () => {
    keyscope = await startConfigured((dir) => ({
      file: { archive: { path: archiveOf(dir), fileBytes: 1 } },
    }));
    const folder = archiveOf(keyscope.dir);
    for (let i = 0; i < 4; i++) await exportKey(`small-file-${i}`);
    await archived(4);
    // The fourth is still being written; three are readable while serve runs.
    expect(finished(folder)).toHaveLength(3);
    expect(await analyzedKeys(folder)).toEqual(['small-file-0', 'small-file-1', 'small-file-2']);
  });

  it('archive.maxBytes: past 3000 bytes the oldest files are deleted and counted, the newest kept', async () => {
    keyscope = await startConfigured((dir) => ({
      env: { KEYSCOPE_ARCHIVE_PATH: archiveOf(dir), KEYSCOPE_ARCHIVE_MAX_BYTES: '3000' },
      file: { archive: { fileBytes: 1000 } },
    }));
    const folder = archiveOf(keyscope.dir);
    for (let i = 0; i < 12; i++) {
      await exportKey(`bounded-${String(i).padStart(2, '0')}`);
      await archived(i + 1);
      expect(diskBytes(folder)).toBeLessThanOrEqual(3000);
    }
    expect(await keyscope.metric('keyscope_archive_deleted_files_total')).toBeGreaterThan(0);
    expect(await keyscope.metric('keyscope_archive_bytes')).toBe(diskBytes(folder));
    await keyscope.running.stop();
    const kept = await analyzedKeys(folder);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(12);
    expect(kept.at(-1)).toBe('bounded-11');
  });

  it('archive.fileMillis: a file is finished once it is 300 ms old, readable while serve runs', async () => {
    keyscope = await startConfigured((dir) => ({
      file: { archive: { path: archiveOf(dir), fileMillis: 300 } },
    }));
    const folder = archiveOf(keyscope.dir);
    await exportKey('aged-file');
    await until(() => finished(folder).length === 1, 5_000);
    expect(await analyzedKeys(folder)).toEqual(['aged-file']);
  });

  it('archive.maxQueuedBytes: past 1 byte waiting a payload is not archived, counted as queue_full, and still answered 200', async () => {
    keyscope = await startConfigured((dir) => ({
      file: { archive: { path: archiveOf(dir), maxQueuedBytes: 1 } },
    }));
    await exportKey('not-queued');
    expect(await keyscope.metric('keyscope_archive_write_failures_total', { reason: 'queue_full' })).toBe(1);
    expect(await keyscope.metric('keyscope_archive_payloads_total')).toBe(0);
    expect(keyscope.lines.filter((line) => line.includes('archive.maxQueuedBytes'))).toHaveLength(1);
  });
});
