import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Attempt } from '@keyscope/attempts';
import { createDetector } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import { server } from '@keyscope/testkit';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer } from '../../src/api/api-server.ts';

// Twenty keys, each executed once in each of 5,000 node-local stores: one incident of 100,000
// stores and nodes, whose findings hold 5,000 attempts each.
const KEYS = 20;
const STORES_PER_KEY = 5_000;

let dir: string;
let store: KeyscopeStore;
let api: FastifyInstance;
let base: string;
let incidentId: string;

function keyAttempts(k: number): Attempt[] {
  return Array.from({ length: STORES_PER_KEY }, (_, i) =>
    server({
      key: `order-${k}`,
      node: `payments-${k}-${i}`,
      store: `payments/node:payments-${k}-${i}`,
      at: 10 + i * 0.001,
      scope: 'node',
    }),
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-incident-detail-'));
  store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
  const detector = createDetector(undefined, { attemptLog: store.attemptLog });
  for (let k = 0; k < KEYS; k++) {
    store.transaction(() =>
      store.applyChanges(
        detector.ingest({
          attempts: keyAttempts(k),
          activity: [],
          invalid: { outcome: 0, hit: 0, scope: 0 },
        }),
      ),
    );
  }
  store.transaction(() => store.applyChanges(detector.flush()));
  incidentId = detector.incidents()[0]!.id;
  api = createApiServer({
    store,
    detector: () => detector,
    tokens: [],
    metrics: async () => '',
    ready: () => true,
  });
  await api.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(api.server.address() as { port: number }).port}`;
}, 120_000);

afterAll(async () => {
  await api?.close();
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the detail of an incident of 100,000 stores', () => {
  it('answers within 5 MB, listing the first stores and nodes and counting them all', async () => {
    const response = await fetch(`${base}/api/v1/incidents/${incidentId}`);
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(5 * 1024 * 1024);
    const detail = JSON.parse(text);
    expect(detail).toMatchObject({
      keys: KEYS,
      storesTotal: KEYS * STORES_PER_KEY,
      nodesTotal: KEYS * STORES_PER_KEY,
      findingsNextCursor: null,
    });
    expect(detail.stores).toHaveLength(1_000);
    expect(detail.nodes).toHaveLength(1_000);
    expect(detail.findings).toHaveLength(KEYS);
    for (const finding of detail.findings) {
      expect(finding).toMatchObject({
        executions: STORES_PER_KEY,
        storesTotal: STORES_PER_KEY,
        attemptsTotal: STORES_PER_KEY,
      });
      expect(finding.stores).toHaveLength(100);
      expect(finding.attempts).toHaveLength(100);
    }
  });

  it('answers /healthz within a second while the detail is served', async () => {
    let serving = true;
    const detail = fetch(`${base}/api/v1/incidents/${incidentId}`)
      .then((response) => response.arrayBuffer())
      .finally(() => {
        serving = false;
      });
    const waits: number[] = [];
    while (serving && waits.length < 200) {
      const started = performance.now();
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      await health.arrayBuffer();
      waits.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await detail;
    expect(waits.length).toBeGreaterThan(0);
    expect(Math.max(...waits)).toBeLessThan(1_000);
  });

  it('pages the findings past the detail through /api/v1/findings?incident=', async () => {
    const response = await fetch(`${base}/api/v1/findings?incident=${incidentId}&limit=2`);
    const findings = (await response.json()) as {
      items: { incidentId: string }[];
      nextCursor: string | null;
    };
    expect(findings.items).toHaveLength(2);
    expect(findings.items.every((finding) => finding.incidentId === incidentId)).toBe(true);
    expect(findings.nextCursor).not.toBeNull();
  });
});
