import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resource, serverSpan } from '@keyscope/attempts/testing';
import { encodeTraces, type Span } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import { loadServeConfig } from '../../src/cli.ts';
import { silentLogger } from '../../src/logger.ts';
import { type RunningService, startServe } from '../../src/serve.ts';
import { serviceScratch } from './service-scratch.ts';

const scratch = serviceScratch('settings-tiers');

/**
 * Starts serve as its CLI does: defaults, then the config file (`yaml`), then `KEYSCOPE_*`
 * variables (`env`), on free loopback ports and a database in the test's folder.
 */
async function serveWith(
  yaml: string,
  env: NodeJS.ProcessEnv = {},
  db = 'keyscope.db',
): Promise<RunningService> {
  const file = join(scratch.dir, 'keyscope.yaml');
  writeFileSync(
    file,
    `api: { port: 0 }\notlp: { http: { port: 0 }, grpc: { port: 0 } }\ndb: { path: ${JSON.stringify(join(scratch.dir, db))} }\n${yaml}`,
  );
  scratch.service = await startServe(await loadServeConfig(['--config', file], env), {
    logger: silentLogger,
  });
  return scratch.service;
}

/** A mapping file in the test's folder, for `mapping.file`. */
function mappingFile(yaml: string): string {
  const file = join(scratch.dir, 'mapping.yaml');
  writeFileSync(file, yaml);
  return file;
}

let nextId = 1;
/** A keyed decision of payments named `name`, on `node` in its store, now. */
function decision(name: string, key: string, node = 'payments-a'): Span {
  const id = nextId++;
  return serverSpan({
    key,
    outcome: 'miss',
    store: `store-${node}`,
    name,
    trace: id,
    id,
    startMillis: Date.now() - 1_000,
    resource: resource({ service: 'payments', instance: node }),
  });
}

async function send(running: RunningService, spans: Span[]): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${running.addresses.otlpHttp.port}/v1/traces`, {
    method: 'POST',
    body: encodeTraces(spans),
    headers: { 'content-type': 'application/x-protobuf' },
  });
  await response.arrayBuffer();
  expect(response.status).toBe(200);
}

async function api<T>(running: RunningService, route: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${running.addresses.api.port}${route}`);
  return (await response.json()) as T;
}

async function metric(running: RunningService, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${running.addresses.api.port}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

interface Scopes {
  items: { operation: string; keys: number }[];
  nextCursor: string | null;
  overflow: { tiers: number; keys: number } | null;
}

describe('tier settings', () => {
  it('detector.maxTiers: from the config file, tiers past it go to the overflow bucket, counted in keyscope_tiers_overflow_total, and their duplicates are still found', async () => {
    const running = await serveWith('detector: { maxTiers: 3 }\n');
    for (const name of ['POST /charge', 'POST /refund', 'POST /capture'])
      await send(running, [decision(name, `k-${name}`)]);
    await send(running, [decision('POST /void', 'k-void')]);
    await send(running, [
      decision('POST /payout', 'order-77', 'payments-a'),
      decision('POST /payout', 'order-77', 'payments-b'),
    ]);
    const scopes = await api<Scopes>(running, '/api/v1/scopes');
    expect(scopes.items.map((row) => row.operation)).toEqual([
      'POST /capture',
      'POST /charge',
      'POST /refund',
    ]);
    expect(scopes.overflow).toMatchObject({ tiers: 2, keys: 2 });
    expect(await metric(running, 'keyscope_tiers_overflow_total')).toBe(3);
    expect(await metric(running, 'keyscope_tiers')).toBe(3);
    const findings = await api<{ items: { key: string; class: string; operation: string }[] }>(
      running,
      '/api/v1/findings',
    );
    expect(findings.items).toContainEqual(
      expect.objectContaining({ key: 'order-77', class: 'cross_store_duplicate', operation: 'POST /payout' }),
    );
  });

  it('detector.maxTiers: from KEYSCOPE_DETECTOR_MAX_TIERS, over the file, one tier is kept and the next overflows', async () => {
    const running = await serveWith('detector: { maxTiers: 100 }\n', { KEYSCOPE_DETECTOR_MAX_TIERS: '1' });
    await send(running, [decision('POST /charge', 'k1')]);
    await send(running, [decision('POST /refund', 'k2')]);
    const scopes = await api<Scopes>(running, '/api/v1/scopes');
    expect(scopes.items.map((row) => row.operation)).toEqual(['POST /charge']);
    expect(scopes.overflow).toMatchObject({ tiers: 1, keys: 1 });
    expect(await metric(running, 'keyscope_tiers_overflow_total')).toBe(1);
  });

  it('mapping.file: with collapseOperationIds on by default, spans named by URL make one tier; false in the mapping file keeps one per URL', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `POST /payments/${(0x8f3a0000 + i).toString(16)}`);
    const collapsing = await serveWith('');
    await send(
      collapsing,
      names.map((name, i) => decision(name, `k${i}`)),
    );
    const collapsed = await api<Scopes>(collapsing, '/api/v1/scopes');
    expect(collapsed.items).toEqual([
      expect.objectContaining({ operation: 'POST /payments/{id}', keys: 20 }),
    ]);
    await collapsing.stop();
    scratch.service = undefined;

    const file = mappingFile('collapseOperationIds: false\n');
    const keeping = await serveWith(`mapping: { file: ${JSON.stringify(file)} }\n`, {}, 'keeping.db');
    await send(
      keeping,
      names.map((name, i) => decision(name, `k${i}`)),
    );
    const kept = await api<Scopes>(keeping, '/api/v1/scopes?limit=100');
    expect(kept.items.map((row) => row.operation).sort()).toEqual([...names].sort());
  });

  it('mapping.file: segments that the mapping file’s operationIdPatterns match collapse to {id} as well', async () => {
    const file = mappingFile("operationIdPatterns: ['[A-Z]{2}-[a-z]+']\n");
    const running = await serveWith(`mapping: { file: ${JSON.stringify(file)} }\n`);
    await send(running, [
      decision('POST /stores/FR-paris/orders', 'k1'),
      decision('POST /stores/DE-berlin/orders', 'k2'),
    ]);
    const scopes = await api<Scopes>(running, '/api/v1/scopes');
    expect(scopes.items).toEqual([
      expect.objectContaining({ operation: 'POST /stores/{id}/orders', keys: 2 }),
    ]);
  });
});
