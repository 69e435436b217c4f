import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeTraces, type Span } from '@keyscope/otlp';
import { resource, span } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { loadServeConfig } from '../../src/cli.ts';
import type { Logger } from '../../src/logger.ts';
import { type RunningService, startServe } from '../../src/serve.ts';
import { serviceScratch } from './service-scratch.ts';

const logger: Logger = { info: () => {}, error: () => {} };
const scratch = serviceScratch('incident-lists');

/** Starts serve as the CLI does: the config file, then KEYSCOPE_* variables over it. */
async function startFrom(detectorYaml: string, env: NodeJS.ProcessEnv = {}): Promise<RunningService> {
  const file = join(scratch.dir, 'keyscope.yaml');
  writeFileSync(
    file,
    [
      'api: { port: 0 }',
      `db: { path: ${JSON.stringify(join(scratch.dir, 'keyscope.db'))} }`,
      'otlp: { http: { port: 0 }, grpc: { port: 0 } }',
      detectorYaml,
    ].join('\n'),
  );
  scratch.service = await startServe(await loadServeConfig(['--config', file], env), { logger });
  return scratch.service;
}

/** `keys` keys, each executed once in each of `stores` node-local stores on its own node. */
function spreadKeys(keys: number, stores: number): Span[] {
  const now = Date.now() - 60_000;
  const spans: Span[] = [];
  for (let k = 0; k < keys; k++) {
    for (let i = 0; i < stores; i++) {
      spans.push(
        span({
          key: `order-${k}`,
          outcome: 'miss',
          store: `payments/node:p-${k}-${i}`,
          scope: 'node',
          trace: k * 100 + i + 1,
          startMillis: now + i * 10,
          resource: resource({ service: 'payments', instance: `p-${k}-${i}` }),
        }),
      );
    }
  }
  return spans;
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

async function getJson<T>(running: RunningService, route: string): Promise<T> {
  const response = await fetch(`http://127.0.0.1:${running.addresses.api.port}${route}`);
  expect(response.status).toBe(200);
  return (await response.json()) as T;
}

interface Listed {
  id: string;
  stores: string[];
  nodes: string[];
  storesTotal: number;
  nodesTotal: number;
}

async function overflow(running: RunningService, holder: string, list: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${running.addresses.api.port}/metrics`);
  const line = (await response.text())
    .split('\n')
    .find((l) => l.startsWith(`keyscope_store_list_overflow_total{holder="${holder}",list="${list}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

describe('detector store and node lists', () => {
  it('detector.maxStoresPerFinding: a finding set to 3 in the config file lists 3 of its 8 stores and nodes, and counts 8', async () => {
    const running = await startFrom('detector: { maxStoresPerFinding: 3 }');
    await send(running, spreadKeys(1, 8));
    const findings = await getJson<{ items: Listed[] }>(running, '/api/v1/findings');
    expect(findings.items).toHaveLength(1);
    expect(findings.items[0]).toMatchObject({
      stores: ['payments/node:p-0-0', 'payments/node:p-0-1', 'payments/node:p-0-2'],
      nodes: ['p-0-0', 'p-0-1', 'p-0-2'],
      storesTotal: 8,
      nodesTotal: 8,
    });
    // The incident's own list is not the finding's: it names all 8.
    const incidents = await getJson<{ items: Listed[] }>(running, '/api/v1/incidents');
    const incident = await getJson<Listed>(running, `/api/v1/incidents/${incidents.items[0]!.id}`);
    expect(incident).toMatchObject({ storesTotal: 8 });
    expect(incident.stores).toHaveLength(8);
    expect(await overflow(running, 'finding', 'stores')).toBe(5);
  });

  it('detector.maxStoresPerIncident: KEYSCOPE_DETECTOR_MAX_STORES_PER_INCIDENT=4 lists 4 of an incident’s 12 stores and nodes, and counts 12', async () => {
    const running = await startFrom('detector: {}', { KEYSCOPE_DETECTOR_MAX_STORES_PER_INCIDENT: '4' });
    await send(running, spreadKeys(2, 6));
    const incidents = await getJson<{ items: (Listed & { keys: number })[] }>(running, '/api/v1/incidents');
    expect(incidents.items).toHaveLength(1);
    const incident = incidents.items[0]!;
    expect(incident).toMatchObject({ keys: 2, storesTotal: 12, nodesTotal: 12 });
    expect(incident.stores).toEqual([
      'payments/node:p-0-0',
      'payments/node:p-0-1',
      'payments/node:p-0-2',
      'payments/node:p-0-3',
    ]);
    expect(incident.nodes).toHaveLength(4);
    const detail = await getJson<Listed & { findings: Listed[] }>(
      running,
      `/api/v1/incidents/${incident.id}`,
    );
    expect(detail).toMatchObject({ storesTotal: 12 });
    expect(detail.stores).toHaveLength(4);
    // A finding's list has its own cap (100): each names its 6.
    expect(detail.findings.map((finding) => finding.stores.length)).toEqual([6, 6]);
    expect(await overflow(running, 'incident', 'stores')).toBe(8);
  });
});
