import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningService, resolveServeConfig, silentLogger, startServe } from '@keyscope/analyzer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createExampleProject } from './support/example-project.ts';
import { codeBlocks, namedFiles, section } from './support/markdown-files.ts';

const docs = readFileSync(new URL('../docs/instrumenting.md', import.meta.url), 'utf8');

/*
 * docs/instrumenting.md's Collector configuration, read as the Collector would read its file:
 * valid YAML, every component a pipeline names defined, and the two pipelines it promises.
 */
const blocks = codeBlocks(docs, 'yaml');

interface Pipeline {
  receivers: string[];
  processors?: string[];
  exporters: string[];
}

interface CollectorConfig {
  receivers: Record<string, unknown>;
  processors: Record<string, Record<string, unknown>>;
  exporters: Record<string, Record<string, unknown>>;
  service: { pipelines: Record<string, Pipeline> };
}

const config = parse(blocks[0] ?? '') as CollectorConfig;

describe('docs/instrumenting.md, the Collector side', () => {
  it('holds one Collector configuration, valid YAML, whose pipelines name only defined components', () => {
    expect(blocks).toHaveLength(1);
    for (const [name, pipeline] of Object.entries(config.service.pipelines)) {
      for (const receiver of pipeline.receivers) expect(config.receivers, name).toHaveProperty([receiver]);
      for (const processor of pipeline.processors ?? [])
        expect(config.processors, name).toHaveProperty([processor]);
      for (const exporter of pipeline.exporters) expect(config.exporters, name).toHaveProperty([exporter]);
    }
  });

  it('sends keyed spans to keyscope through a filter and no sampler, and tail-samples only the backend', () => {
    const pipelines = Object.values(config.service.pipelines);
    const toKeyscope = pipelines.filter((pipeline) => pipeline.exporters.includes('otlphttp/keyscope'));
    expect(toKeyscope).toHaveLength(1);
    const keyscope = toKeyscope[0]!;
    const kinds = (keyscope.processors ?? []).map((processor) => processor.split('/')[0]);
    expect(kinds).toContain('filter');
    expect(kinds.filter((kind) => /sampl/.test(kind!))).toEqual([]);
    const filter = config.processors[(keyscope.processors ?? []).find((p) => p.startsWith('filter'))!]!;
    const conditions = (filter.traces as { span: string[] }).span.join(' ');
    expect(conditions).toContain('attributes["idempotency.key"] == nil');
    expect(conditions).toContain('attributes["http.request.header.idempotency-key"] == nil');
    expect(config.exporters['otlphttp/keyscope']).toMatchObject({
      endpoint: expect.stringMatching(/:4318$/),
    });

    const backend = pipelines.filter((pipeline) => pipeline !== keyscope);
    expect(backend).toHaveLength(1);
    expect(backend[0]!.processors).toContain('tail_sampling');
    expect(backend[0]!.exporters).not.toContain('otlphttp/keyscope');
    expect(backend[0]!.receivers).toEqual(keyscope.receivers);
  });
});

/*
 * docs/instrumenting.md's fastify service and fetch clients, run as written there with plain
 * `node` and the real instrumentations: an ESM node (`--import`) and a CommonJS node
 * (`--require`) with node stores, an ESM and a CommonJS checkout client that each time out on one
 * node and retry the same key on the other, spans exported over OTLP/HTTP to an embedded keyscope.
 */
const fastifyAndFetch = section(docs, 'A fastify service and its fetch clients');
const exampleFiles = namedFiles(fastifyAndFetch, 'js');
const ROUTE = '/orders/:orderId/payments';
/** What each process runs, as the section's run commands start them. */
const NODE_A = ['--import', './instrumentation.mjs', 'payments.mjs'];
const NODE_B = ['--require', './instrumentation.cjs', 'payments.cjs'];
const ESM_CLIENT = ['--import', './instrumentation.mjs', 'checkout.mjs'];
const CJS_CLIENT = ['--require', './instrumentation.cjs', 'checkout.cjs'];
const CLIENTS = {
  esm: { key: 'order-7781-esm', order: 'o-7781', instance: 'checkout-esm' },
  cjs: { key: 'order-7782-cjs', order: 'o-7782', instance: 'checkout-cjs' },
} as const;
// The clients give up after 1.5 s; the card processor answers an order's first charge after 4 s,
// the next at once. The nodes are warmed first, so a retry answers well within the timeout.
const CLIENT_TIMEOUT_MILLIS = 1_500;
const FIRST_CHARGE_MILLIS = 4_000;
/** The section's packages, each linked from the test package at the version the lockfile pins. */
const EXAMPLE_PACKAGES = [
  'fastify',
  '@opentelemetry/api',
  '@opentelemetry/sdk-node',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/resources',
  '@opentelemetry/instrumentation',
  '@opentelemetry/instrumentation-http',
  '@opentelemetry/instrumentation-undici',
];

describe('docs/instrumenting.md, a fastify service and its fetch clients', () => {
  let dir: string;
  let keyscope: RunningService;
  let api: string;
  let cardProcessor: Server;
  const charges: string[] = [];
  let answeredCharges = 0;
  const children: ChildProcessWithoutNullStreams[] = [];
  const clientOutput = { esm: '', cjs: '' };
  let stderrOfProcesses = '';

  // biome-ignore lint/suspicious/noExplicitAny: the test reads the API's JSON as a client script would.
  async function get(path: string): Promise<any> {
    const response = await fetch(`${api}${path}`);
    expect(response.status).toBe(200);
    return response.json();
  }

  function startNode(args: readonly string[], env: Record<string, string>): ChildProcessWithoutNullStreams {
    const clean = { ...process.env };
    // Without the vitest worker's flags and any OpenTelemetry settings of the machine.
    delete clean.NODE_OPTIONS;
    for (const name of Object.keys(clean)) if (name.startsWith('OTEL_')) delete clean[name];
    const child = spawn(process.execPath, args, { cwd: dir, env: { ...clean, ...env } });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderrOfProcesses += chunk));
    children.push(child);
    return child;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'keyscope-instrumenting-'));
    createExampleProject(dir, { files: exampleFiles, packages: EXAMPLE_PACKAGES });
    keyscope = await startServe(
      resolveServeConfig({
        api: { port: 0 },
        db: { path: join(dir, 'keyscope.db') },
        otlp: { http: { port: 0 }, grpc: { port: 0 } },
      }),
      { logger: silentLogger },
    );
    api = `http://127.0.0.1:${keyscope.addresses.api.port}`;
    const firstChargeOf = new Set<string>();
    cardProcessor = createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        const { order } = JSON.parse(body) as { order: string };
        const delay = firstChargeOf.has(order) ? 10 : FIRST_CHARGE_MILLIS;
        firstChargeOf.add(order);
        charges.push(order);
        setTimeout(() => {
          answeredCharges++;
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ id: `ch_${charges.length}`, order }));
        }, delay);
      });
    });
    await new Promise<void>((resolve) => cardProcessor.listen(0, '127.0.0.1', resolve));

    const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${keyscope.addresses.otlpHttp.port}` };
    const node = (args: readonly string[], instance: string) =>
      startNode(args, {
        ...otlp,
        CARD_PROCESSOR_URL: `http://127.0.0.1:${(cardProcessor.address() as AddressInfo).port}/charges`,
        PORT: '0',
        OTEL_SERVICE_NAME: 'payments',
        OTEL_RESOURCE_ATTRIBUTES: `service.instance.id=${instance},k8s.cluster.name=eu-1`,
      });
    const nodes = [node(NODE_A, 'payments-a-1'), node(NODE_B, 'payments-a-2')];
    const [urlA, urlB] = await Promise.all(nodes.map(listeningUrl));
    // A keyless POST through each node's plugin, instrumentation and router: 400, nothing charged.
    for (const url of [urlA, urlB]) {
      const warmUp = await fetch(`${url}/orders/warm-up/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(warmUp.status).toBe(400);
    }

    const client = (args: readonly string[], which: keyof typeof CLIENTS, urls: string[]) => {
      const child = startNode(args, {
        ...otlp,
        OTEL_SERVICE_NAME: 'checkout',
        OTEL_RESOURCE_ATTRIBUTES: `service.instance.id=${CLIENTS[which].instance}`,
        IDEMPOTENCY_KEY: CLIENTS[which].key,
        ORDER_ID: CLIENTS[which].order,
        TIMEOUT_MILLIS: String(CLIENT_TIMEOUT_MILLIS),
        PAYMENTS_URLS: urls.join(','),
      });
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (clientOutput[which] += chunk));
      return exited(child);
    };
    const clientExits = await Promise.all([
      client(ESM_CLIENT, 'esm', [urlA!, urlB!]),
      client(CJS_CLIENT, 'cjs', [urlB!, urlA!]),
    ]);
    expect(clientExits, stderrOfProcesses).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
    // The abandoned first charges still complete; then the nodes stop (SIGTERM), flushing their spans.
    await waitFor(() => answeredCharges === 4, FIRST_CHARGE_MILLIS + 10_000);
    for (const child of nodes) child.kill('SIGTERM');
    expect(await Promise.all(nodes.map(exited))).toEqual([
      { code: null, signal: 'SIGTERM' },
      { code: null, signal: 'SIGTERM' },
    ]);
  }, 120_000);

  afterAll(async () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(children.map(exited));
    await keyscope?.stop();
    if (cardProcessor !== undefined) await new Promise((resolve) => cardProcessor.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the files of the section with the packages its install line pins, as its commands start them', () => {
    expect([...exampleFiles.keys()].sort()).toEqual([
      'checkout.cjs',
      'checkout.mjs',
      'instrumentation.cjs',
      'instrumentation.mjs',
      'payments.cjs',
      'payments.mjs',
    ]);
    const commands = codeBlocks(fastifyAndFetch, 'sh').flatMap((block) => block.split('\n'));
    const install = commands.find((line) => line.startsWith('npm install '))!;
    const pinned = install
      .split(/\s+/)
      .slice(2)
      .filter((word) => !word.endsWith('.tgz'));
    const installed = EXAMPLE_PACKAGES.map((name) => {
      const manifest = JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8'));
      return `${name}@${manifest.version}`;
    });
    expect(pinned.sort()).toEqual(installed.sort());
    const started = commands.flatMap((line) => /\bnode (--.*?)(?: &)?$/.exec(line)?.[1]?.split(' ') ?? []);
    expect(started).toEqual([...NODE_A, ...NODE_B, ...ESM_CLIENT, ...CJS_CLIENT]);
  });

  it('times out each client on its first node and retries the same key on the other, where it runs again', () => {
    for (const which of ['esm', 'cjs'] as const) {
      const lines = clientOutput[which].trim().split('\n');
      expect(lines, which).toHaveLength(2);
      expect(lines[0], which).toMatch(/ timeout$/);
      expect(lines[1], which).toMatch(/ 201$/);
    }
    expect(charges.sort()).toEqual(['o-7781', 'o-7781', 'o-7782', 'o-7782']);
    expect(stderrOfProcesses).toBe('');
  });

  it('A fastify service with the gate plugin yields an incident titled with its route (a test with the real instrumentation)', async () => {
    const { items } = await get('/api/v1/incidents?class=cross_store_duplicate');
    expect(items).toHaveLength(1);
    expect(items[0].title).toBe(`payments POST ${ROUTE}: 2 keys executed twice in different dedup stores`);
    for (const { key } of Object.values(CLIENTS)) {
      const { findings } = await get(`/api/v1/keys/${key}`);
      expect(findings, key).toHaveLength(1);
      expect(findings[0], key).toMatchObject({
        class: 'cross_store_duplicate',
        service: 'payments',
        operation: ROUTE,
      });
      // In the order the key ran in them: each client tried another node first.
      expect([...findings[0].stores].sort(), key).toEqual([
        'payments/node:payments-a-1',
        'payments/node:payments-a-2',
      ]);
    }
  });

  for (const [which, setup] of [
    ['esm', 'ESM, node --import'],
    ['cjs', 'CommonJS, node --require'],
  ] as const) {
    it(`gives a fetch client's sends CLIENT spans that carry the key and parent the server spans (${setup})`, async () => {
      const { key, instance } = CLIENTS[which];
      const lookup = await get(`/api/v1/keys/${key}`);
      expect(lookup).toMatchObject({ seen: true, executions: 2, ranTwice: true });
      // biome-ignore lint/suspicious/noExplicitAny: the API's JSON.
      const of = (kind: string) => lookup.attempts.filter((attempt: any) => attempt.kind === kind);
      const sends = of('client');
      // The key is the span's own, from the start hook (a send given the key by its server span
      // would say keyFrom: 'child'); the timed-out send has it too.
      expect(sends.map((send: { statusCode: number }) => send.statusCode).sort()).toEqual([0, 201]);
      for (const send of sends) {
        expect(send).toMatchObject({ key, service: 'checkout', node: instance, operation: 'POST' });
        expect(send.keyFrom).toBeUndefined();
      }
      // Each server span continues its send's trace (traceparent) and names the send as its parent.
      const servers = of('server');
      expect(servers).toHaveLength(2);
      const parents = servers.map((server: { traceId: string; parentSpanId: string }) => ({
        traceId: server.traceId,
        spanId: server.parentSpanId,
      }));
      expect(parents).toEqual(
        expect.arrayContaining(
          sends.map((send: { traceId: string; spanId: string }) => ({
            traceId: send.traceId,
            spanId: send.spanId,
          })),
        ),
      );
      expect(servers.map((server: { operation: string }) => server.operation)).toEqual([ROUTE, ROUTE]);
    });
  }
});

async function listeningUrl(child: ChildProcessWithoutNullStreams): Promise<string> {
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" within 30 s:\n${output}`)), 30_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const url = /listening on (\S+)/.exec(output)?.[1];
      if (url !== undefined) {
        clearTimeout(timer);
        resolve(url);
      }
    });
    child.stderr.on('data', (chunk: string) => (output += chunk));
    child.on('exit', (code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
  });
}

function exited(
  child: ChildProcessWithoutNullStreams,
): Promise<{ code: number | null; signal: string | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
}

async function waitFor(condition: () => boolean, timeoutMillis: number): Promise<void> {
  const deadline = Date.now() + timeoutMillis;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
