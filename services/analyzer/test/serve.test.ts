import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isKeyscopeError } from '@keyscope/errors';
import { encodeTraces, type Span } from '@keyscope/otlp';
import { fillDisk } from '@keyscope/store/testing';
import { span } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { type RunningService, startServe } from '../src/serve.ts';
import { damagedDatabase } from './settings/damaged-database.ts';

let dir: string;
let path: string;
let service: RunningService | undefined;
let lines: string[];
const logger: Logger = { info: (line) => lines.push(line), error: (line) => lines.push(line) };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-serve-'));
  path = join(dir, 'keyscope.db');
  lines = [];
});

afterEach(async () => {
  await service?.stop();
  service = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function start(db: Record<string, unknown> = {}): Promise<RunningService> {
  const config = resolveServeConfig({
    api: { port: 0 },
    db: { path, ...db },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
  });
  return startServe(config, { logger });
}

let nextSpan = 1;
/** `count` keys executed once each, now. */
function spans(count: number): Span[] {
  const now = Date.now();
  return Array.from({ length: count }, () => {
    const id = nextSpan++;
    return span({
      trace: id,
      id,
      startMillis: now,
      endMillis: now + 50,
      attributes: { 'idempotency.key': `key-${id}-${'x'.repeat(40)}`, 'idempotency.outcome': 'miss' },
    });
  });
}

async function exportSpans(running: RunningService, count: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${running.addresses.otlpHttp.port}/v1/traces`, {
    method: 'POST',
    body: encodeTraces(spans(count)),
    headers: { 'content-type': 'application/x-protobuf' },
  });
  await response.arrayBuffer();
  return response.status;
}

async function get(running: RunningService, route: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`http://127.0.0.1:${running.addresses.api.port}${route}`);
  return { status: response.status, text: await response.text() };
}

describe('keyscope serve and its database', () => {
  it('refuses to start on a damaged database', async () => {
    damagedDatabase(path);
    const error = await start().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isKeyscopeError(error) && error.code).toBe('KS_STORE_CORRUPT');
  });

  it('exits 1 on a damaged database, saying what to do', async () => {
    damagedDatabase(path);
    const repositoryRoot = fileURLToPath(new URL('../../../', import.meta.url));
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'services/analyzer/src/cli.ts', 'serve', '--db', path, '--api-port', '0'],
      { cwd: repositoryRoot },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/KS_STORE_CORRUPT/);
    expect(stderr).toMatch(/restore the file from a backup, or move it away/);
  }, 30_000);

  it('answers /readyz 503 while the disk is full, and 200 again once a request writes', async () => {
    service = await start();
    expect(await exportSpans(service, 10)).toBe(200);
    expect((await get(service, '/readyz')).status).toBe(200);

    // A full disk, with SQLite's own limit: the file may not grow past the pages it has.
    const disk = fillDisk(service.store);
    let refused = 0;
    for (let round = 0; round < 50 && refused < 5; round++) {
      const status = await exportSpans(service, 500);
      if (status !== 200) {
        expect(status).toBe(503);
        refused++;
      }
    }
    expect(refused).toBe(5);
    const readyz = await get(service, '/readyz');
    expect(readyz.status).toBe(503);
    expect(JSON.parse(readyz.text)).toMatchObject({
      status: 'not ready',
      reason: expect.stringMatching(/SQLITE_FULL/),
    });
    expect((await get(service, '/metrics')).text).toMatch(/^keyscope_db_writable 0$/m);
    // Five refused requests, one line in the log.
    expect(lines.filter((line) => line.startsWith('pipeline: store transaction failed'))).toHaveLength(1);

    disk.makeRoom();
    expect(await exportSpans(service, 10)).toBe(200);
    expect((await get(service, '/readyz')).status).toBe(200);
    expect((await get(service, '/metrics')).text).toMatch(/^keyscope_db_writable 1$/m);
  }, 30_000);

  it('answers /readyz 200 again once the disk has room, even with no request to write', async () => {
    service = await start();
    const disk = fillDisk(service.store);
    for (let round = 0; round < 50 && (await exportSpans(service, 500)) === 200; round++);
    expect((await get(service, '/readyz')).status).toBe(503);

    disk.makeRoom();
    // A probe write every 5 s.
    let status = 503;
    for (let wait = 0; wait < 80 && status === 503; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await get(service, '/readyz')).status;
    }
    expect(status).toBe(200);
  }, 30_000);

  it('purges the oldest rows once the database passes db.maxBytes, and counts them', async () => {
    const maxBytes = 512 * 1024;
    service = await start({ maxBytes });
    for (let round = 0; round < 20 && service.store.usedBytes() <= maxBytes; round++) {
      expect(await exportSpans(service, 500)).toBe(200);
    }
    expect(service.store.usedBytes()).toBeGreaterThan(maxBytes);
    // The bound is checked every second.
    let metrics = '';
    for (
      let wait = 0;
      wait < 100 && !/keyscope_db_purged_rows_total\{reason="size"\}/.test(metrics);
      wait++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      metrics = (await get(service, '/metrics')).text;
    }
    const purged = Number(/^keyscope_db_purged_rows_total\{reason="size"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(purged).toBeGreaterThan(0);
    expect(metrics).toMatch(new RegExp(`^keyscope_db_max_bytes ${maxBytes}$`, 'm'));
    const bytes = Number(/^keyscope_db_bytes (\d+)$/m.exec(metrics)?.[1]);
    expect(bytes).toBeLessThanOrEqual(maxBytes);
    // The newest attempts stay.
    expect(service.store.attemptsOfKey(`key-${nextSpan - 1}-${'x'.repeat(40)}`)).toHaveLength(1);
    expect(lines.some((line) => line.includes('past db.maxBytes'))).toBe(true);
  }, 30_000);
});

describe('keyscope serve and its pages', () => {
  it('pages a duplicate that was the last traffic 16 s after its repeat, on the wall clock alone', async () => {
    const T0 = Date.now();
    let clock = T0;
    // A webhook sink on loopback, noting the service clock when each page arrives.
    const pages: { body: { event: string; incident: { severity: string; keys: number } }; at: number }[] = [];
    const sink = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        pages.push({ body: JSON.parse(body), at: clock });
        response.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    try {
      const config = resolveServeConfig({
        api: { port: 0 },
        db: { path },
        otlp: { http: { port: 0 }, grpc: { port: 0 } },
        alerts: {
          sinks: [{ type: 'webhook', url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/` }],
          pollIntervalMillis: 100,
        },
      });
      service = await startServe(config, { logger, now: () => clock });

      // k1 runs on payments-a-1, again on payments-a-2 at T0 - 2 s: a critical duplicate, and the
      // last spans keyscope receives.
      const repeatAt = T0 - 2_000;
      const execution = (id: number, instance: string, startMillis: number) =>
        span({
          trace: id,
          id,
          startMillis,
          endMillis: startMillis + 250,
          attributes: { 'idempotency.key': 'k1', 'idempotency.outcome': 'miss', 'idempotency.scope': 'node' },
          resource: { attributes: { 'service.name': 'payments', 'service.instance.id': instance } },
        });
      const response = await fetch(`http://127.0.0.1:${service.addresses.otlpHttp.port}/v1/traces`, {
        method: 'POST',
        body: encodeTraces([
          execution(1, 'payments-a-1', T0 - 3_000),
          execution(2, 'payments-a-2', repeatAt),
        ]),
        headers: { 'content-type': 'application/x-protobuf' },
      });
      await response.arrayBuffer();
      expect(response.status).toBe(200);
      // The service's tick as its timer runs it once a second, here at once: it notes when the
      // newest activity arrived, on the clock, before the clock moves on.
      service.pipeline.tick();

      // From here only the clock moves, and only the service's own timers run. A second short of
      // the lateness (10 s) and the detection horizon (6 s) past the repeat: not settled, no page.
      clock = repeatAt + 15_000;
      await sleep(2_500);
      expect(pages).toEqual([]);

      clock = repeatAt + 16_000;
      for (let wait = 0; wait < 100 && pages.length === 0; wait++) await sleep(100);
      expect(pages).toMatchObject([
        {
          body: { event: 'incident.opened', incident: { severity: 'critical', keys: 1 } },
          at: repeatAt + 16_000,
        },
      ]);
    } finally {
      await service?.stop();
      service = undefined;
      await new Promise((resolve) => sink.close(resolve));
    }
  }, 30_000);
});

function sleep(millis: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, millis));
}
