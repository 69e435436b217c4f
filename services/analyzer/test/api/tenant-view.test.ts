import type { Attempt } from '@keyscope/attempts';
import { activity, server } from '@keyscope/testkit';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiToken } from '../../src/auth/auth.ts';
import { createServedStore, type ServedStore } from './served-store.ts';

const TOKENS: ApiToken[] = [
  { token: 'operator-secret-0001', role: 'admin', name: 'operator' },
  { token: 'acme-admin-secret-01', role: 'admin', tenant: 'acme', name: 'acme-admin' },
  { token: 'acme-read-secret-001', role: 'read', tenant: 'acme' },
];
const OPERATOR = { authorization: 'Bearer operator-secret-0001' };
const ACME_ADMIN = { authorization: 'Bearer acme-admin-secret-01' };
const ACME_READ = { authorization: 'Bearer acme-read-secret-001' };

// payments nodes a, b, c serve steadily; node a goes silent from second 60 to 120.
const traffic = [
  ...activity({ node: 'a', fromSecond: 0, toSecond: 60 }),
  ...activity({ node: 'a', fromSecond: 120, toSecond: 180 }),
  ...activity({ node: 'b', fromSecond: 0, toSecond: 180 }),
  ...activity({ node: 'c', fromSecond: 0, toSecond: 180 }),
];

/** Keys executed on node a before it went down and again after: acme's on node b, globex's on c. */
function failoverDuplicates(tenant: 'acme' | 'globex', count: number): Attempt[] {
  const [node, store] = tenant === 'acme' ? ['b', 'acme-store-B'] : ['c', 'globex-store-C'];
  const out: Attempt[] = [];
  for (let i = 0; i < count; i++) {
    const key = `${tenant}-${i}`;
    const at = 58 + i * 0.05;
    out.push(server({ key, tenant, node: 'a', store: 'shared-A', at, durationMillis: 1900 }));
    out.push(server({ key, tenant, node, store, at: at + 3 }));
  }
  return out;
}

let served: ServedStore;
let app: FastifyInstance;
let failoverId: string;

async function get(url: string, headers: Record<string, string>) {
  const response = await app.inject({ url, headers });
  return { status: response.statusCode, body: response.json() };
}

beforeEach(async () => {
  served = createServedStore();
  served.ingest(
    [
      ...failoverDuplicates('acme', 3),
      ...failoverDuplicates('globex', 2),
      // Hours later, outside any routing event: an incident of globex's alone, and one of acme's.
      server({ key: 'globex-late', tenant: 'globex', node: 'b', store: 'globex-store-B', at: 7200 }),
      server({ key: 'globex-late', tenant: 'globex', node: 'c', store: 'globex-store-C', at: 7202 }),
      server({ key: 'acme-late', tenant: 'acme', node: 'b', store: 'acme-store-B', at: 14_400 }),
      server({ key: 'acme-late', tenant: 'acme', node: 'b', store: 'acme-store-B', at: 14_400.2 }),
      // One key sent by both tenants: a key collision, whose evidence is both tenants' requests.
      server({ key: 'shared-key', tenant: 'acme', node: 'b', store: 'acme-store-B', at: 30 }),
      server({
        key: 'shared-key',
        tenant: 'globex',
        node: 'b',
        store: 'acme-store-B',
        at: 31,
        outcome: 'hit',
      }),
    ],
    traffic,
  );
  app = served.api(TOKENS);
  const all = (await get('/api/v1/incidents', OPERATOR)).body.items;
  failoverId = all.find((i: { routingEvent: unknown }) => i.routingEvent !== null).id;
});

afterEach(() => served.close());

describe('one failover that doubled two tenants’ keys', () => {
  it('is one incident of every key for a token without a tenant', async () => {
    const { body } = await get(`/api/v1/incidents/${failoverId}`, OPERATOR);
    expect(body).toMatchObject({
      keys: 5,
      stores: ['acme-store-B', 'globex-store-C', 'shared-A'],
      nodes: ['a', 'b', 'c'],
    });
    expect(body.findings).toHaveLength(5);
  });

  it('counts and names only acme’s keys, stores and nodes for an acme token', async () => {
    const listed = (await get('/api/v1/incidents', ACME_READ)).body.items;
    const failover = listed.find((i: { id: string }) => i.id === failoverId);
    expect(failover).toMatchObject({ keys: 3, stores: ['acme-store-B', 'shared-A'], nodes: ['a', 'b'] });
    expect(failover.title).toMatch(/: 3 keys executed twice/);
    expect(failover.advice).toContain('2 different dedup stores');
    expect(JSON.stringify(listed)).not.toContain('globex');

    const { body } = await get(`/api/v1/incidents/${failoverId}`, ACME_READ);
    expect(body).toMatchObject({
      keys: 3,
      stores: ['acme-store-B', 'shared-A'],
      nodes: ['a', 'b'],
      alerts: [],
    });
    expect(body.findings.map((f: { key: string }) => f.key).sort()).toEqual(['acme-0', 'acme-1', 'acme-2']);
    expect(JSON.stringify(body)).not.toContain('globex');
  });

  it('shows an acme token neither globex’s findings nor the key collision both tenants share', async () => {
    const findings = (await get('/api/v1/findings?limit=500', ACME_READ)).body.items;
    expect(findings.map((f: { key: string }) => f.key).sort()).toEqual([
      'acme-0',
      'acme-1',
      'acme-2',
      'acme-late',
    ]);
    expect((await get('/api/v1/findings?class=key_collision', OPERATOR)).body.items).toHaveLength(1);
    expect((await get('/api/v1/keys/shared-key', ACME_READ)).body.findings).toEqual([]);
    expect((await get('/api/v1/keys/globex-0', ACME_READ)).body).toMatchObject({
      attempts: [],
      findings: [],
    });
    const listed = (await get('/api/v1/incidents', ACME_READ)).body.items;
    expect(listed.map((i: { class: string }) => i.class)).not.toContain('key_collision');
  });
});

describe('a tenant-scoped admin token', () => {
  async function act(action: 'ack' | 'resolve', id: string, headers: Record<string, string>) {
    const response = await app.inject({ method: 'POST', url: `/api/v1/incidents/${id}/${action}`, headers });
    return { status: response.statusCode, body: response.json() };
  }

  it.each(['ack', 'resolve'] as const)(
    'may not %s the failover incident that also holds globex’s keys',
    async (action) => {
      const refused = await act(action, failoverId, ACME_ADMIN);
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('KS_API_FORBIDDEN');
      expect((await get(`/api/v1/incidents/${failoverId}`, OPERATOR)).body).toMatchObject({
        acknowledged: false,
        resolvedBy: null,
      });
    },
  );

  it('does not find an incident of globex’s alone', async () => {
    const globexOnly = (await get('/api/v1/incidents', OPERATOR)).body.items.find(
      (i: { keys: number; stores: string[] }) => i.stores.includes('globex-store-B'),
    );
    for (const action of ['ack', 'resolve'] as const) {
      const refused = await act(action, globexOnly.id, ACME_ADMIN);
      expect(refused.status).toBe(404);
      expect(refused.body.error.code).toBe('KS_API_NOT_FOUND');
    }
    expect((await get(`/api/v1/incidents/${globexOnly.id}`, ACME_ADMIN)).status).toBe(404);
    expect((await get(`/api/v1/incidents/${globexOnly.id}`, OPERATOR)).body.acknowledged).toBe(false);
  });

  it('acknowledges and resolves an incident of acme’s alone', async () => {
    const acmeOnly = (await get('/api/v1/incidents', ACME_ADMIN)).body.items.find(
      (i: { class: string }) => i.class === 'same_store_duplicate',
    );
    expect((await act('ack', acmeOnly.id, ACME_ADMIN)).body).toMatchObject({
      acknowledged: true,
      acknowledgedBy: 'acme-admin',
    });
    expect((await act('resolve', acmeOnly.id, ACME_ADMIN)).body).toMatchObject({
      status: 'resolved',
      resolvedBy: 'acme-admin',
    });
  });

  it('leaves the failover incident to a token without a tenant', async () => {
    expect((await act('ack', failoverId, OPERATOR)).body).toMatchObject({ acknowledged: true, keys: 5 });
  });
});
