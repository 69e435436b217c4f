import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RunningService, resolveServeConfig, startServe } from '@keyscope/analyzer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnUnderSdk, whenReady } from '../support/sdk-process.ts';

/**
 * The replay-header trap, with the real OpenTelemetry HTTP instrumentation: two payments services
 * that record no idempotency attributes, only captured headers, each with a node-local dedup store
 * that replays a key's second request. `charges` passes its `Idempotent-Replayed` header to
 * `res.writeHead(status, headers)`, which the instrumentation does not capture; `refunds` sets it
 * with `res.setHeader`, which it does. Each gets the same keys twice on its one node; their spans
 * go to an embedded keyscope over OTLP/HTTP, which pages to a webhook.
 */
const HERE = dirname(fileURLToPath(import.meta.url));
const KEYS = 3;

let dir: string;
let keyscope: RunningService;
let sink: Server;
const pages: { event: string; incident: { service: string; severity: string; title: string } }[] = [];
const lines: string[] = [];
const services: ChildProcess[] = [];
let charges: string;
let refunds: string;

/** A service under the SDK of instrumentation.ts, ready once it says so. */
async function startService(name: string, via: 'writeHead' | 'setHeader', otlpUrl: string): Promise<string> {
  const port = await freePort();
  const child = spawnUnderSdk(join(HERE, 'instrumentation.ts'), join(HERE, 'replay-service.ts'), {
    env: {
      REPLAY_PORT: String(port),
      REPLAY_HEADER_VIA: via,
      REPLAY_OTLP_URL: otlpUrl,
      REPLAY_RESOURCE: JSON.stringify({ 'service.name': name, 'service.instance.id': `${name}-1` }),
    },
    stdout: 'inherit',
  });
  services.push(child);
  await whenReady(child, name);
  return `http://127.0.0.1:${port}/payments`;
}

function flushed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.on('message', (message: { flushed?: boolean }) => message.flushed === true && resolve());
    child.send({ flush: true });
  });
}

async function pay(
  url: string,
  key: string,
): Promise<{ status: number; replayed: string | null; body: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: '{"amount":4200}',
  });
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed'),
    body: await response.text(),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads the API's JSON as a client script would.
async function api(path: string): Promise<any> {
  const response = await fetch(`http://127.0.0.1:${keyscope.addresses.api.port}${path}`);
  expect(response.status).toBe(200);
  return response.json();
}

async function metrics(): Promise<string> {
  return (await fetch(`http://127.0.0.1:${keyscope.addresses.api.port}/metrics`)).text();
}

async function scopeRow(service: string) {
  const { items } = await api('/api/v1/scopes');
  return items.find((row: { service: string }) => row.service === service);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-replay-header-'));
  sink = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      pages.push(JSON.parse(body));
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const mapping = join(dir, 'mapping.yaml');
  // Outcomes from the HTTP answers; both stores are node-local (the services' spans do not say).
  writeFileSync(
    mapping,
    'inferOutcomeFromHttp: true\nscopes:\n  - { service: charges, scope: node }\n  - { service: refunds, scope: node }\n',
  );
  keyscope = await startServe(
    resolveServeConfig({
      api: { port: 0 },
      db: { path: join(dir, 'keyscope.db') },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
      mapping: { file: mapping },
      // Every key counted, and a tier judged on as many repeats as this test sends.
      detector: { coverageKeysOneIn: 1, replayHeaderMinRepeats: KEYS },
      alerts: {
        sinks: [{ type: 'webhook', url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}/` }],
        pollIntervalMillis: 100,
      },
    }),
    { logger: { info: (line) => lines.push(line), error: (line) => lines.push(line) } },
  );
  const otlpUrl = `http://127.0.0.1:${keyscope.addresses.otlpHttp.port}/v1/traces`;
  [charges, refunds] = await Promise.all([
    startService('charges', 'writeHead', otlpUrl),
    startService('refunds', 'setHeader', otlpUrl),
  ]);

  for (let i = 0; i < KEYS; i++) {
    for (const url of [charges, refunds]) {
      const first = await pay(url, `order-${i}`);
      const repeat = await pay(url, `order-${i}`);
      // Each service replayed the repeat, and said so on the wire.
      expect([first.status, first.replayed, repeat.status, repeat.replayed]).toEqual([
        201,
        null,
        201,
        'true',
      ]);
      expect(repeat.body).toBe(first.body);
    }
  }
  // keyscope counts a key's repeats once twice its allowed lateness (10 s) has passed them in the
  // spans' own time, and pages an incident 16 s after its repeat: traffic goes on past both.
  await new Promise((resolve) => setTimeout(resolve, 22_000));
  for (const url of [charges, refunds]) await pay(url, 'order-later');
  await Promise.all(services.map(flushed));
  const deadline = Date.now() + 15_000;
  while ((await scopeRow('charges'))?.replayHeader?.verdict !== 'missing' && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 200));
  // The alerter polls every 100 ms: a page for a settled incident has left by now.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
}, 90_000);

afterAll(async () => {
  for (const child of services) child.disconnect();
  await keyscope?.stop();
  await new Promise((resolve) => sink?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('a replay header set with writeHead, under the real HTTP instrumentation', () => {
  it('reports the writeHead service missing its replay header, with the cause and the fix, in the scope report, the metric and the log', async () => {
    const row = await scopeRow('charges');
    expect(row.replayHeader).toMatchObject({ verdict: 'missing', replays: 0, repeats: KEYS });
    expect(row.replayHeader.advice).toMatch(/writeHead.*setHeader.*idempotency\.outcome/);
    expect(await metrics()).toMatch(
      /^keyscope_replay_header_missing\{service="charges",operation="[^"]+"\} 1$/m,
    );
    expect(lines.filter((line) => /charges .*replay header missing/.test(line))).toHaveLength(1);
  });

  it('reports its repeats as findings, high and saying why, and pages no critical incident', async () => {
    const { items } = await api('/api/v1/findings?limit=100');
    const findings = items.filter((finding: { service: string }) => finding.service === 'charges');
    expect(findings.map((f: { key: string }) => f.key).sort()).toEqual(['order-0', 'order-1', 'order-2']);
    for (const finding of findings)
      expect(finding).toMatchObject({
        class: 'same_store_duplicate',
        severity: 'high',
        severityReason: 'replay_unseen',
      });
    // The incident was settled and paged — as high, with the reason in its title.
    const paged = pages.filter((page) => page.incident.service === 'charges');
    expect(paged.length).toBeGreaterThan(0);
    expect(paged.map((page) => page.incident.severity)).not.toContain('critical');
    expect(paged[0]!.incident.title).toMatch(/no replay seen at this tier/);
    expect(pages.map((page) => page.incident.severity)).not.toContain('critical');
  });

  it('finds nothing wrong with the setHeader service: its replays are replays', async () => {
    const row = await scopeRow('refunds');
    expect(row.replayHeader).toMatchObject({ verdict: 'captured', replays: KEYS, repeats: KEYS });
    expect(await metrics()).not.toMatch(/keyscope_replay_header_missing\{service="refunds"/);
    const { items } = await api('/api/v1/findings?limit=100');
    expect(items.filter((finding: { service: string }) => finding.service === 'refunds')).toEqual([]);
    expect(pages.filter((page) => page.incident.service === 'refunds')).toEqual([]);
    expect(lines.filter((line) => line.includes('refunds') && line.includes('replay header'))).toEqual([]);
  });
});
