import type { RunningService } from '@keyscope/analyzer';
import { scenarios, simulate } from '@keyscope/simulator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedKeyscope, startEmbeddedKeyscope } from '../support/embedded-keyscope.ts';
import { exportOverOtlpHttp } from '../support/otlp-http-export.ts';

/**
 * "Did keyscope see the failover?": the embedded service, fed a simulated node failover by the
 * real OpenTelemetry OTLP exporter, lists the routing events it inferred through
 * `GET /api/v1/routing-events`, each with the incidents that cite it, for each token what it may see.
 */
const START = Date.now() - 5 * 60_000;
const { spans, truth } = simulate(scenarios.nodeFailover({ startUnixMillis: START }), { seed: 3 });

const TOKENS = {
  operator: { token: 'operator-read-secret-01', role: 'read', name: 'operator' },
  acme: { token: 'acme-read-secret-000001', role: 'read', tenant: 'acme', name: 'acme' },
  nobody: { token: 'nobody-read-secret-0001', role: 'read', tenant: 'no-such-tenant', name: 'nobody' },
} as const;

let keyscope: EmbeddedKeyscope;
let service: RunningService;
let api: string;

interface EventJson {
  id: string;
  type: string;
  service: string;
  node: string;
  start: string;
  end: string;
  ended: boolean;
  description: string;
  incidentIds: string[];
}

async function request(path: string, as: keyof typeof TOKENS = 'operator'): Promise<Response> {
  return fetch(`${api}${path}`, { headers: { authorization: `Bearer ${TOKENS[as].token}` } });
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads the API's JSON as a client script would.
async function get(path: string, as: keyof typeof TOKENS = 'operator'): Promise<any> {
  const response = await request(path, as);
  expect(response.status).toBe(200);
  return response.json();
}

/** Every page of a list, following nextCursor. */
async function all(path: string, as: keyof typeof TOKENS = 'operator'): Promise<EventJson[]> {
  const items: EventJson[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 50; page++) {
    const separator = path.includes('?') ? '&' : '?';
    const body = await get(`${path}${cursor === null ? '' : `${separator}cursor=${cursor}`}`, as);
    items.push(...body.items);
    cursor = body.nextCursor;
    if (cursor === null) return items;
  }
  throw new Error(`more than 50 pages at ${path}`);
}

beforeAll(async () => {
  keyscope = await startEmbeddedKeyscope('routing-events', { api: { tokens: Object.values(TOKENS) } });
  ({ service, api } = keyscope);
  for (const result of await exportOverOtlpHttp(service.addresses.otlpHttp.port, spans)) {
    expect(result.code).toBe(0);
  }
  // Each export was answered after its commit; a tick infers the routing events and regroups.
  service.pipeline.tick(Date.now());
}, 120_000);

afterAll(async () => {
  await keyscope?.stop();
});

describe('GET /api/v1/routing-events on the embedded service fed a node failover', () => {
  it('lists a node_down of payments for each node that went down, its window covering the outage', async () => {
    const { items }: { items: EventJson[] } = await get('/api/v1/routing-events');
    const downs = truth.routingEvents.filter((e) => e.type === 'node_down');
    expect(downs.length).toBeGreaterThan(0);
    for (const down of downs) {
      const seen = items.find((e) => e.type === 'node_down' && e.node === down.node);
      expect(seen, `node_down of ${down.node}`).toMatchObject({ service: 'payments', ended: true });
      expect(seen!.description).toContain(down.node!);
      // Windows are counted in whole seconds.
      expect(Date.parse(seen!.start)).toBeGreaterThanOrEqual(down.startUnixMillis - 1000);
      expect(Date.parse(seen!.start)).toBeLessThanOrEqual(down.startUnixMillis + 1000);
      expect(Date.parse(seen!.end)).toBeGreaterThan(Date.parse(seen!.start));
    }
  });

  it('names with each event the incidents that cite it, as those incidents name the event', async () => {
    const events = await all('/api/v1/routing-events');
    const incidents: { id: string; routingEvent: { id: string } | null }[] = (
      await get('/api/v1/incidents?limit=500')
    ).items;
    const cited = incidents.filter((i) => i.routingEvent !== null);
    expect(cited.length).toBeGreaterThan(0);
    for (const incident of cited) {
      const event = events.find((e) => e.id === incident.routingEvent!.id);
      expect(event?.incidentIds).toContain(incident.id);
    }
    const citations = events.flatMap((e) => e.incidentIds.map((id) => `${e.id} ${id}`)).sort();
    expect(citations).toEqual(cited.map((i) => `${i.routingEvent!.id} ${i.id}`).sort());
  });

  it('filters by type, service and a time range the window overlaps', async () => {
    const events = await all('/api/v1/routing-events');
    const [first] = events.filter((e) => e.type === 'node_down');
    expect((await all('/api/v1/routing-events?type=node_down')).map((e) => e.id)).toEqual(
      events.filter((e) => e.type === 'node_down').map((e) => e.id),
    );
    expect(await all('/api/v1/routing-events?type=region_failover')).toEqual([]);
    expect(await all('/api/v1/routing-events?service=ledger')).toEqual([]);
    const during = await all(
      `/api/v1/routing-events?since=${encodeURIComponent(first!.start)}&until=${encodeURIComponent(first!.end)}`,
    );
    expect(during.map((e) => e.id)).toContain(first!.id);
    for (const e of during) {
      expect(Date.parse(e.end)).toBeGreaterThanOrEqual(Date.parse(first!.start));
      expect(Date.parse(e.start)).toBeLessThan(Date.parse(first!.end));
    }
    const after = await all(`/api/v1/routing-events?since=${encodeURIComponent(new Date().toISOString())}`);
    expect(after).toEqual([]);
  });

  it('pages one event at a time to the same list, newest first', async () => {
    const whole = await all('/api/v1/routing-events');
    expect(whole.length).toBeGreaterThanOrEqual(2);
    const first = await get('/api/v1/routing-events?limit=1');
    expect(first.items).toHaveLength(1);
    expect(first.nextCursor).toEqual(expect.any(String));
    expect(await all('/api/v1/routing-events?limit=1')).toEqual(whole);
  });

  it('refuses a type, time or cursor it does not know, with the code of a bad parameter', async () => {
    for (const query of ['type=node_up', 'since=yesterday', 'cursor=bm90LWEtY3Vyc29y', 'limit=0', 'page=2']) {
      const response = await request(`/api/v1/routing-events?${query}`);
      expect(response.status, query).toBe(400);
      const body = (await response.json()) as { error: { code: string } };
      expect(body.error.code, query).toMatch(/^KS_/);
    }
    expect((await fetch(`${api}/api/v1/routing-events`)).status).toBe(401);
  });

  it('shows a tenant the events of the services its findings are in, citing only its incidents', async () => {
    const events = await all('/api/v1/routing-events');
    const acmeEvents = await all('/api/v1/routing-events', 'acme');
    expect(acmeEvents.map((e) => e.id)).toEqual(events.map((e) => e.id));
    const acmeIncidents = new Set(
      (await get('/api/v1/incidents?limit=500', 'acme')).items.map((i: { id: string }) => i.id),
    );
    expect(acmeIncidents.size).toBeGreaterThan(0);
    const acmeCitations = acmeEvents.flatMap((e) => e.incidentIds);
    expect(new Set(acmeCitations)).toEqual(
      new Set(events.flatMap((e) => e.incidentIds).filter((id) => acmeIncidents.has(id))),
    );
    expect(await all('/api/v1/routing-events', 'nobody')).toEqual([]);
  });

  it('is in the OpenAPI document with its filters', async () => {
    const doc = await get('/openapi.json');
    const operation = doc.paths['/api/v1/routing-events'].get;
    expect(operation.parameters.map((p: { name: string }) => p.name).sort()).toEqual(
      ['cursor', 'limit', 'service', 'since', 'type', 'until'].sort(),
    );
  });
});
