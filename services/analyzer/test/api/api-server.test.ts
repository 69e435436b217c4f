import type { Attempt } from '@keyscope/attempts';
import { createDetector, type Detector, defaultDetectorConfig } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import { server } from '@keyscope/testkit';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApiWithPage } from '../../src/api-with-alerts.ts';
import type { ApiToken } from '../../src/auth/auth.ts';

let store: KeyscopeStore;
let detector: Detector;
let ready = true;

function ingest(attempts: Attempt[]): void {
  store.transaction(() =>
    store.applyChanges(
      detector.ingest({
        attempts,
        activity: [],
        invalid: { outcome: 0, hit: 0, scope: 0 },
      }),
    ),
  );
}

function duplicate(key: string, at: number, tenant = ''): Attempt[] {
  return [
    server({ key, tenant, node: 'a', store: 'A', at }),
    server({ key, tenant, node: 'b', store: 'B', at: at + 2 }),
  ];
}

function api(tokens: ApiToken[] = []): FastifyInstance {
  return createApiWithPage({
    traceLinkTemplate: '',
    store,
    detector: () => detector,
    tokens,
    metrics: async () => 'keyscope_up 1\n',
    ready: () => ready,
    now: () => Date.UTC(2026, 0, 2),
  });
}

const TOKENS: ApiToken[] = [
  { token: 'admin-secret', role: 'admin', name: 'alice' },
  { token: 'read-secret', role: 'read' },
  { token: 'acme-secret', role: 'read', tenant: 'acme' },
  { token: 'scrape-secret', role: 'metrics' },
  { token: 'acme-admin-secret', role: 'admin', tenant: 'acme' },
];

beforeEach(() => {
  store = new KeyscopeStore({ path: ':memory:' });
  // Coverage counted over every key, for exact figures.
  detector = createDetector(
    { ...defaultDetectorConfig(), coverageKeysOneIn: 1 },
    { attemptLog: store.attemptLog },
  );
  ready = true;
});

afterEach(() => store.close());

describe('findings', () => {
  it('lists findings with RFC 3339 times and their evidence', async () => {
    ingest(duplicate('k1', 0));
    const response = await api().inject('/api/v1/findings');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.nextCursor).toBeNull();
    expect(body.items[0]).toMatchObject({
      key: 'k1',
      class: 'cross_store_duplicate',
      severity: 'critical',
      executions: 2,
      retriedBy: 'unknown',
      firstSeen: '2026-01-01T00:00:00.000Z',
      stores: ['A', 'B'],
    });
    expect(body.items[0].attempts[0]).toMatchObject({
      kind: 'server',
      node: 'a',
      start: '2026-01-01T00:00:00.000Z',
    });
  });

  it('filters by class and key and pages with a cursor', async () => {
    for (let i = 0; i < 3; i++) ingest(duplicate(`k${i}`, i * 10));
    const app = api();
    expect((await app.inject('/api/v1/findings?key=k1')).json().items).toHaveLength(1);
    expect((await app.inject('/api/v1/findings?class=key_collision')).json().items).toHaveLength(0);
    const first = (await app.inject('/api/v1/findings?limit=2')).json();
    const second = (await app.inject(`/api/v1/findings?limit=2&cursor=${first.nextCursor}`)).json();
    expect([...first.items, ...second.items].map((f: { key: string }) => f.key)).toEqual(['k2', 'k1', 'k0']);
  });

  it.each([
    ['an unknown class', '/api/v1/findings?class=nope'],
    ['a limit out of range', '/api/v1/findings?limit=0'],
    ['a time that is not RFC 3339', '/api/v1/findings?since=yesterday'],
    ['an unknown parameter', '/api/v1/findings?colour=red'],
    ['a foreign cursor', '/api/v1/findings?cursor=bm9wZQ'],
  ])('answers 400 with a code for %s', async (_name, url) => {
    const response = await api().inject(url);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toMatch(/^KS_(API_BAD_PARAMETER|CURSOR_INVALID)$/);
  });
});

describe('incidents', () => {
  it('shows an incident with its findings and 404 for an unknown id', async () => {
    ingest([...duplicate('k1', 0), ...duplicate('k2', 1)]);
    const app = api();
    const [incident] = (await app.inject('/api/v1/incidents?status=open')).json().items;
    expect(incident).toMatchObject({
      status: 'open',
      keys: 2,
      class: 'cross_store_duplicate',
      acknowledged: false,
    });
    const detail = (await app.inject(`/api/v1/incidents/${incident.id}`)).json();
    expect(detail.findings.map((f: { key: string }) => f.key).sort()).toEqual(['k1', 'k2']);
    expect(detail.advice).toContain('cluster scope');
    const missing = await app.inject('/api/v1/incidents/inc_nope');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('KS_API_NOT_FOUND');
  });

  it('lets an admin token acknowledge and resolve, and refuses a read token', async () => {
    ingest(duplicate('k1', 0));
    const app = api(TOKENS);
    const [incident] = (
      await app.inject({ url: '/api/v1/incidents', headers: { authorization: 'Bearer read-secret' } })
    ).json().items;
    const refused = await app.inject({
      method: 'POST',
      url: `/api/v1/incidents/${incident.id}/ack`,
      headers: { authorization: 'Bearer read-secret' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('KS_API_FORBIDDEN');
    const acked = await app.inject({
      method: 'POST',
      url: `/api/v1/incidents/${incident.id}/ack`,
      headers: { authorization: 'Bearer admin-secret' },
    });
    expect(acked.json()).toMatchObject({ acknowledged: true, acknowledgedBy: 'alice' });
    const resolved = await app.inject({
      method: 'POST',
      url: `/api/v1/incidents/${incident.id}/resolve`,
      headers: { authorization: 'Bearer admin-secret' },
    });
    expect(resolved.json()).toMatchObject({ status: 'resolved', resolvedBy: 'alice' });
  });
});

describe('authentication', () => {
  it('requires a known bearer token when tokens are configured', async () => {
    const app = api(TOKENS);
    expect((await app.inject('/api/v1/findings')).statusCode).toBe(401);
    expect(
      (await app.inject({ url: '/api/v1/findings', headers: { authorization: 'Bearer wrong' } })).statusCode,
    ).toBe(401);
    expect((await app.inject('/healthz')).statusCode).toBe(200);
  });

  it('refuses /metrics without a token when tokens are configured', async () => {
    const response = await api(TOKENS).inject('/metrics');
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe('KS_API_UNAUTHENTICATED');
    expect(response.body).not.toContain('keyscope_up');
  });

  it('answers /metrics to a metrics, read or admin token without a tenant', async () => {
    const app = api(TOKENS);
    for (const token of ['scrape-secret', 'read-secret', 'admin-secret']) {
      const response = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}` } });
      expect(response.statusCode).toBe(200);
      expect(response.body).toContain('keyscope_up');
    }
  });

  it('refuses /metrics to a tenant’s tokens, which must not see other tenants’ service names', async () => {
    const app = api(TOKENS);
    for (const token of ['acme-secret', 'acme-admin-secret']) {
      const response = await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${token}` } });
      expect(response.statusCode).toBe(403);
      expect(response.json().error.code).toBe('KS_API_FORBIDDEN');
      expect(response.body).not.toContain('keyscope_up');
    }
  });

  it('lets a metrics token read /metrics and nothing else', async () => {
    ingest(duplicate('k1', 0));
    const app = api(TOKENS);
    const headers = { authorization: 'Bearer scrape-secret' };
    for (const url of [
      '/api/v1/findings',
      '/api/v1/incidents',
      '/api/v1/keys/k1',
      '/api/v1/scopes',
      '/api/v1/ui-config',
    ]) {
      const response = await app.inject({ url, headers });
      expect(response.statusCode, url).toBe(403);
      expect(response.json().error.code).toBe('KS_API_FORBIDDEN');
    }
  });

  it('answers /metrics to loopback only when no tokens are configured', async () => {
    const app = api();
    expect((await app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode).toBe(200);
    const remote = await app.inject({ url: '/metrics', remoteAddress: '10.1.2.3' });
    expect(remote.statusCode).toBe(403);
    expect(remote.body).not.toContain('keyscope_up');
  });

  it('answers only loopback when no tokens are configured', async () => {
    const app = api();
    expect((await app.inject({ url: '/api/v1/findings', remoteAddress: '127.0.0.1' })).statusCode).toBe(200);
    const remote = await app.inject({ url: '/api/v1/findings', remoteAddress: '10.1.2.3' });
    expect(remote.statusCode).toBe(403);
  });

  it('shows a tenant-scoped token only its tenant’s findings, incidents and attempts', async () => {
    ingest([...duplicate('k1', 0, 'acme'), ...duplicate('k2', 5000, 'globex')]);
    const app = api(TOKENS);
    const headers = { authorization: 'Bearer acme-secret' };
    expect(
      (await app.inject({ url: '/api/v1/findings', headers }))
        .json()
        .items.map((f: { key: string }) => f.key),
    ).toEqual(['k1']);
    const incidents = (await app.inject({ url: '/api/v1/incidents', headers })).json().items;
    expect(incidents).toHaveLength(1);
    const other = (
      await app.inject({ url: '/api/v1/incidents', headers: { authorization: 'Bearer read-secret' } })
    )
      .json()
      .items.find((i: { id: string }) => i.id !== incidents[0].id);
    expect((await app.inject({ url: `/api/v1/incidents/${other.id}`, headers })).statusCode).toBe(404);
    expect((await app.inject({ url: '/api/v1/keys/k2', headers })).json()).toMatchObject({
      attempts: [],
      findings: [],
    });
  });
});

describe('key lookup, scope report, health and docs', () => {
  it('answers whether a key ran twice', async () => {
    ingest(duplicate('k1', 0));
    ingest([server({ key: 'k2', at: 0 })]);
    const app = api();
    expect((await app.inject('/api/v1/keys/k1')).json()).toMatchObject({
      key: 'k1',
      executions: 2,
      ranTwice: true,
    });
    expect((await app.inject('/api/v1/keys/k2')).json()).toMatchObject({
      key: 'k2',
      executions: 1,
      ranTwice: false,
    });
  });

  it('says a key it holds no attempt of was never seen, and how far back its attempts reach', async () => {
    const app = api();
    expect((await app.inject('/api/v1/keys/k-absent')).json()).toMatchObject({
      seen: false,
      evidenceSince: null,
      executions: 0,
    });
    ingest(duplicate('k1', 0));
    const lookup = (await app.inject('/api/v1/keys/k-absent')).json();
    expect(lookup.seen).toBe(false);
    expect(Date.parse(lookup.evidenceSince)).toBeGreaterThan(0);
    expect((await app.inject('/api/v1/keys/k1')).json()).toMatchObject({ seen: true });
  });

  it('counts an admission that failed before its effect as no execution, and one of unknown effect apart', async () => {
    ingest([
      server({
        key: 'k-none',
        node: 'a',
        store: 'A',
        at: 0,
        statusCode: 503,
        released: true,
        effect: 'none',
      }),
      server({ key: 'k-none', node: 'b', store: 'B', at: 2 }),
      server({ key: 'k-unknown', node: 'a', store: 'A', at: 0, statusCode: 503, released: true }),
      server({ key: 'k-unknown', node: 'b', store: 'B', at: 2 }),
    ]);
    const app = api();
    expect((await app.inject('/api/v1/keys/k-none')).json()).toMatchObject({
      executions: 1,
      unconfirmedExecutions: 0,
      ranTwice: false,
    });
    expect((await app.inject('/api/v1/keys/k-unknown')).json()).toMatchObject({
      executions: 1,
      unconfirmedExecutions: 1,
      ranTwice: false,
    });
  });

  it('serves the scope report', async () => {
    ingest(duplicate('k1', 0));
    const body = (await api().inject('/api/v1/scopes')).json();
    expect(body.items[0]).toMatchObject({
      service: 'payments',
      declaredScope: 'node',
      smallestCoveringScope: 'cluster',
    });
  });

  it('serves how much of each tier keyscope sees', async () => {
    ingest(duplicate('k1', 0));
    // Counted once final: the end of the input here.
    detector.flush();
    const body = (await api().inject('/api/v1/scopes')).json();
    expect(body.items[0].coverage).toEqual({
      keysOneIn: 1,
      arrivals: 0,
      arrivalsWithDecision: 0,
      requests: 0,
      requestsWithSend: 0,
      keys: 1,
      keysFullyVisible: 1,
      sends: 0,
      sendsWithServerSpan: 0,
      arrivalsWithDecisionRatio: null,
      requestsWithSendRatio: null,
      keysFullyVisibleRatio: 1,
      sendsWithServerSpanRatio: null,
    });
  });

  it('pages the scope report by limit and cursor, each tier once, and answers the tiers past the cap', async () => {
    detector = createDetector(
      { ...defaultDetectorConfig(), maxTiers: 120 },
      { attemptLog: store.attemptLog },
    );
    ingest(
      Array.from({ length: 130 }, (_, i) =>
        server({
          key: `k${i}`,
          node: 'a',
          store: 'A',
          operation: `POST /op-${String(i).padStart(3, '0')}`,
          at: i,
        }),
      ),
    );
    const app = api();
    const operations: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? '?limit=50' : `?limit=50&cursor=${cursor}`;
      const response = await app.inject(`/api/v1/scopes${query}`);
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.items.length).toBeLessThanOrEqual(50);
      expect(body.overflow).toMatchObject({ tiers: 10, keys: 10 });
      operations.push(...body.items.map((row: { operation: string }) => row.operation));
      cursor = body.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(operations).toEqual(
      Array.from({ length: 120 }, (_, i) => `POST /op-${String(i).padStart(3, '0')}`),
    );
    // Without a limit, a page of 50.
    expect((await app.inject('/api/v1/scopes')).json().items).toHaveLength(50);
    expect((await app.inject('/api/v1/scopes?limit=501')).json().error.code).toBe('KS_API_BAD_PARAMETER');
    expect((await app.inject('/api/v1/scopes?cursor=czEy')).json().error.code).toBe('KS_CURSOR_INVALID');
    const docs = (await app.inject('/docs/json')).json();
    expect(docs.paths['/api/v1/scopes'].get.parameters.map((p: { name: string }) => p.name)).toEqual([
      'limit',
      'cursor',
    ]);
  });

  it('answers no overflow while the tiers fit', async () => {
    ingest(duplicate('k1', 0));
    expect((await api().inject('/api/v1/scopes')).json()).toMatchObject({ nextCursor: null, overflow: null });
  });

  it('answers readiness, metrics and the OpenAPI document', async () => {
    const app = api();
    expect((await app.inject('/readyz')).statusCode).toBe(200);
    ready = false;
    expect((await app.inject('/readyz')).statusCode).toBe(503);
    expect((await app.inject('/metrics')).body).toContain('keyscope_up');
    const docs = (await app.inject('/docs/json')).json();
    expect(Object.keys(docs.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/findings',
        '/api/v1/incidents/{id}/ack',
        '/api/v1/keys/{key}',
        '/api/v1/scopes',
      ]),
    );
  });
});
