import type { RunningService } from '@keyscope/analyzer';
import { scenarios, simulate } from '@keyscope/simulator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedKeyscope, startEmbeddedKeyscope } from '../support/embedded-keyscope.ts';
import { exportOverOtlpHttp } from '../support/otlp-http-export.ts';

/**
 * The README's promise, end to end: the embedded service with SQLite, fed a simulated node
 * failover by the real OpenTelemetry OTLP exporter, answers through its API with findings, one
 * incident per failover, and "did key X run twice".
 */
const START = Date.now() - 5 * 60_000;
const { spans, truth } = simulate(scenarios.nodeFailover({ startUnixMillis: START }), { seed: 3 });

let keyscope: EmbeddedKeyscope;
let service: RunningService;
let api: string;

// biome-ignore lint/suspicious/noExplicitAny: the test reads the API's JSON as a client script would.
async function get(path: string): Promise<any> {
  const response = await fetch(`${api}${path}`);
  expect(response.status).toBe(200);
  return response.json();
}

beforeAll(async () => {
  keyscope = await startEmbeddedKeyscope('e2e');
  ({ service, api } = keyscope);
  const results = await exportOverOtlpHttp(service.addresses.otlpHttp.port, spans, { compression: 'gzip' });
  for (const result of results) {
    expect(result.error).toBeUndefined();
    expect(result.code).toBe(0);
  }
  // The receiver answered each export after its commit; one tick regroups by routing event.
  service.pipeline.tick(Date.now());
}, 120_000);

afterAll(async () => {
  await keyscope?.stop();
});

describe('the embedded service fed a node failover by the real OTLP exporter', () => {
  it('checkpoints its SQLite WAL on the background thread, off the event loop', () => {
    expect(service.store.checkpointsInBackground).toBe(true);
  });

  it('reports every truth duplicate and nothing else', async () => {
    const body = await get('/api/v1/findings?limit=500');
    const found = body.items.map((f: { key: string; class: string }) => `${f.key} ${f.class}`).sort();
    expect(found).toEqual(truth.keys.map((k) => `${k.key} ${k.class}`).sort());
    expect(found.length).toBeGreaterThan(0);
  });

  it('groups the duplicates into one open incident per failover that caused them', async () => {
    const failovers = new Set(truth.keys.map((k) => k.routingEventId).filter((id) => id !== undefined));
    const { items } = await get('/api/v1/incidents?status=open&class=cross_store_duplicate');
    expect(items).toHaveLength(failovers.size);
    for (const incident of items) {
      expect(incident.routingEvent).toMatchObject({ type: 'node_down', service: 'payments' });
      expect(incident.advice).toMatch(/cluster scope/);
    }
    expect(items.reduce((sum: number, i: { keys: number }) => sum + i.keys, 0)).toBe(truth.keys.length);
  });

  it('answers whether a key ran twice', async () => {
    const duplicated = truth.keys[0]!;
    const twice = await get(`/api/v1/keys/${encodeURIComponent(duplicated.key)}`);
    expect(twice).toMatchObject({ ranTwice: true, executions: duplicated.executions.length });
    expect(twice.attempts.length).toBeGreaterThanOrEqual(2);

    const duplicatedKeys = new Set(truth.keys.map((k) => k.key));
    const clean = spans.find((s) => {
      const key = s.attributes['idempotency.key'];
      return typeof key === 'string' && !duplicatedKeys.has(key);
    })!.attributes['idempotency.key'] as string;
    expect(await get(`/api/v1/keys/${encodeURIComponent(clean)}`)).toMatchObject({
      ranTwice: false,
      executions: 1,
    });
  });

  it('exposes what it ingested on /metrics', async () => {
    const text = await (await fetch(`${api}/metrics`)).text();
    expect(text).toMatch(
      new RegExp(`keyscope_spans_received_total\\{transport="http"\\} ${spans.length}\\b`),
    );
    expect(text).toMatch(/keyscope_findings_total\{class="cross_store_duplicate"\} [1-9]/);
    expect(text).toMatch(/keyscope_open_incidents [1-9]/);
  });
});
