import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTraces } from '@keyscope/otlp';
import { scenarios, simulate } from '@keyscope/simulator';
import { type KafkaCluster, startKafkaCluster } from '@keyscope/testkit/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../../services/analyzer/src/config.ts';
import { type RunningRoles, startRoles } from '../../services/analyzer/src/kafka/start-roles.ts';
import { silentLogger } from '../../services/analyzer/src/logger.ts';

/**
 * The scaled mode's ingest role keeps the OTLP payloads it acknowledges in `archive.path`, as the
 * embedded service does, and its /metrics says how the archive is doing: a scaled deployment
 * sees its archive's losses where the embedded one does.
 */
const { spans } = simulate(scenarios.nodeFailover({ startUnixMillis: Date.now() - 5 * 60_000 }), {
  seed: 11,
});
const PAYLOADS = 3;

let cluster: KafkaCluster;
let keyscope: RunningRoles | undefined;
const dir = mkdtempSync(join(tmpdir(), 'keyscope-ingest-archive-'));
const archive = join(dir, 'archive');

beforeAll(async () => {
  cluster = await startKafkaCluster({ attempts: 1 });
}, 60_000);

afterAll(async () => {
  await keyscope?.stop();
  await cluster?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

function metricValue(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe("the ingest role's archive", () => {
  it('archives the payloads it acknowledges and shows the archive on its /metrics', async () => {
    const config = resolveServeConfig({
      role: 'ingest',
      api: { port: 0 },
      otlp: { http: { port: 0 }, grpc: { port: 0 } },
      archive: { path: archive },
      kafka: {
        brokers: cluster.brokers,
        traces: { topic: '' },
        attempts: { topic: cluster.topic('attempts'), partitions: 1 },
        stateDir: join(dir, 'partitions'),
      },
    });
    keyscope = await startRoles(config, { logger: silentLogger });
    const otlp = keyscope.addresses.otlpHttp!;
    const per = Math.ceil(spans.length / PAYLOADS);
    for (let at = 0; at < spans.length; at += per) {
      const response = await fetch(`http://${otlp.host}:${otlp.port}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf' },
        body: Buffer.from(encodeTraces(spans.slice(at, at + per))),
      });
      expect(response.status).toBe(200);
    }
    const api = keyscope.addresses.api;
    let text = '';
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      text = await (await fetch(`http://${api.host}:${api.port}/metrics`)).text();
      if (metricValue(text, 'keyscope_archive_payloads_total') === PAYLOADS) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(metricValue(text, 'keyscope_archive_payloads_total')).toBe(PAYLOADS);
    expect(metricValue(text, 'keyscope_archive_written_bytes_total')).toBeGreaterThan(0);
    expect(metricValue(text, 'keyscope_archive_bytes')).toBeGreaterThan(0);
    expect(text).not.toMatch(/^keyscope_archive_write_failures_total\{/m);

    await keyscope.stop();
    keyscope = undefined;
    expect(readdirSync(archive).filter((name) => /^traces-.*\.jsonl\.gz$/.test(name))).toHaveLength(1);
  }, 120_000);
});
