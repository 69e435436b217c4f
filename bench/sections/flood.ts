import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_NODE_FLAGS } from '@keyscope/analyzer';
import { serverSpan } from '@keyscope/attempts/testing';
import { encodeTraces, type Span } from '@keyscope/otlp';
import { median } from '../measure.ts';
import type { Section } from '../section.ts';

const CLI = fileURLToPath(new URL('../../services/analyzer/src/cli.ts', import.meta.url));
const SPANS_PER_PAYLOAD = 512;
const CONNECTIONS = 4;
const PROBE_EVERY_MILLIS = 100;
const HEALTHZ_TARGET_MILLIS = 1_000;

/**
 * `keyscope serve` started by its CLI in a process of its own, with every key in the evidence
 * coverage sample (`KEYSCOPE_DETECTOR_COVERAGE_KEYS_ONE_IN=1`), flooded over OTLP/HTTP with
 * spans whose every key is new, as fast as it answers, on `CONNECTIONS` connections. Meanwhile
 * `/healthz` is asked every `PROBE_EVERY_MILLIS`: its slowest answer is the longest the service's
 * event loop was held, which is also how long ingest stopped. The flood runs in `repetitions`
 * windows of `flood.windowSeconds`, one service throughout: the join's tables grow across them.
 */
export const floodSection: Section = {
  name: 'flood',
  async run(context) {
    const { repetitions, flood } = context.sizes;
    const dir = mkdtempSync(join(tmpdir(), 'keyscope-bench-flood-'));
    const [apiPort, httpPort, grpcPort] = await freePorts(3);
    const service = spawn(process.execPath, [...SERVICE_NODE_FLAGS, '--import', 'tsx', CLI, 'serve'], {
      env: {
        ...process.env,
        KEYSCOPE_API_PORT: String(apiPort),
        KEYSCOPE_OTLP_HTTP_PORT: String(httpPort),
        KEYSCOPE_OTLP_GRPC_PORT: String(grpcPort),
        KEYSCOPE_DB_PATH: join(dir, 'keyscope.db'),
        KEYSCOPE_DETECTOR_COVERAGE_KEYS_ONE_IN: '1',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS + 1 });
    try {
      await waitForHealthz(apiPort!, service);
      const slowest: number[] = [];
      const rates: number[] = [];
      let nextKey = 0;
      for (let window = 0; window < repetitions; window++) {
        const endAt = performance.now() + flood.windowSeconds * 1000;
        let accepted = 0;
        const senders = Array.from({ length: CONNECTIONS }, async () => {
          while (performance.now() < endAt) {
            const first = nextKey;
            nextKey += SPANS_PER_PAYLOAD;
            const status = await post(agent, httpPort!, uniqueKeyPayload(first, Date.now()));
            if (status === 200) accepted += SPANS_PER_PAYLOAD;
          }
        });
        const started = performance.now();
        const probes = probeHealthz(agent, apiPort!, endAt);
        await Promise.all(senders);
        rates.push(accepted / ((performance.now() - started) / 1000));
        slowest.push((await probes).reduce((a, b) => Math.max(a, b), 0));
      }
      return [
        {
          section: 'flood',
          measurement: '/healthz slowest answer under a unique-key flood',
          value: Math.max(...slowest),
          unit: 'ms',
          target: { comparison: '<=', bound: HEALTHZ_TARGET_MILLIS },
          samples: slowest,
          note: `the slowest of ${repetitions} windows of ${flood.windowSeconds} s, each its slowest answer; every key in the coverage sample`,
        },
        {
          section: 'flood',
          measurement: 'unique keys accepted under the flood',
          value: median(rates),
          unit: 'spans/s',
          samples: rates,
        },
      ];
    } finally {
      agent.destroy();
      service.kill('SIGTERM');
      await new Promise((resolve) => service.once('exit', resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

function uniqueKeyPayload(firstKey: number, nowUnixMillis: number): Uint8Array {
  const spans: Span[] = [];
  for (let i = 0; i < SPANS_PER_PAYLOAD; i++) {
    spans.push(
      serverSpan({
        key: `flood-${firstKey + i}`,
        outcome: 'miss',
        store: 'payments-1',
        trace: firstKey + i + 1,
        startMillis: nowUnixMillis - 200,
        durationMillis: 150,
      }),
    );
  }
  return encodeTraces(spans);
}

function post(agent: Agent, port: number, body: Uint8Array): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/traces',
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/x-protobuf', 'content-length': body.byteLength },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** Milliseconds of each `/healthz` answer asked every PROBE_EVERY_MILLIS until `endAt`. */
async function probeHealthz(agent: Agent, port: number, endAt: number): Promise<number[]> {
  const latencies: number[] = [];
  while (performance.now() < endAt) {
    const started = performance.now();
    await get(agent, port, '/healthz');
    const took = performance.now() - started;
    latencies.push(took);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, PROBE_EVERY_MILLIS - took)));
  }
  return latencies;
}

function get(agent: Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, agent }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}

async function waitForHealthz(port: number, service: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (service.exitCode !== null) throw new Error(`keyscope serve exited with status ${service.exitCode}`);
    const status = await get(new Agent(), port, '/healthz').catch(() => 0);
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('keyscope serve did not answer /healthz within 60 s');
}

async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve) => {
          const server = createServer();
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}
