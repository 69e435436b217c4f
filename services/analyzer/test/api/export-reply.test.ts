import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Attempt } from '@keyscope/attempts';
import { createDetector, type Finding } from '@keyscope/detector';
import type { KeyscopeStore, PageResult } from '@keyscope/store';
import { server } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXECUTION_COLUMNS } from '../../src/presentation/finding-export.ts';
import { csvObjects, parseCsv } from './export-csv.ts';
import { createServedStore, type ServedStore } from './served-store.ts';

/** The reconciliation export of GET /api/v1/findings and GET /api/v1/incidents/:id, over real fastify. */

const TOKENS = [
  { token: 'read-secret', role: 'read' as const },
  { token: 'acme-secret', role: 'read' as const, tenant: 'acme' },
];
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

let served: ServedStore;
beforeEach(() => {
  served = createServedStore();
});
afterEach(() => served.close());

/** Two executions of `key` in two node stores, `at` seconds in. */
function duplicate(key: string, at: number, tenant = '', service = 'payments'): Attempt[] {
  return [
    server({ key, tenant, service, node: 'a', store: 'A', at, businessId: `${key}-pay-1` }),
    server({ key, tenant, service, node: 'b', store: 'B', at: at + 2, businessId: `${key}-pay-2` }),
  ];
}

describe('GET /api/v1/findings as CSV and NDJSON', () => {
  it('answers format=csv with one row per execution, as an attachment', async () => {
    served.ingest([...duplicate('k1', 0), ...duplicate('k2', 10)]);
    const response = await served.api().inject('/api/v1/findings?format=csv');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8; header=present');
    expect(response.headers['content-disposition']).toBe('attachment; filename="keyscope-findings.csv"');
    expect(parseCsv(response.body)[0]).toEqual(EXECUTION_COLUMNS);
    const rows = csvObjects(response.body);
    const findings = served.store.findings.list({}, { limit: 10 }).items;
    expect(rows.map((r) => [r.key, r.store, r.node, r.businessId])).toEqual([
      ['k2', 'A', 'a', 'k2-pay-1'],
      ['k2', 'B', 'b', 'k2-pay-2'],
      ['k1', 'A', 'a', 'k1-pay-1'],
      ['k1', 'B', 'b', 'k1-pay-2'],
    ]);
    const k1 = findings.find((f) => f.key === 'k1')!;
    expect(rows[2]).toEqual({
      key: 'k1',
      tenant: '',
      class: 'cross_store_duplicate',
      findingId: k1.id,
      incidentId: k1.incidentId,
      store: 'A',
      node: 'a',
      start: '2026-01-01T00:00:00.000Z',
      traceId: k1.attempts[0]!.traceId,
      spanId: k1.attempts[0]!.spanId,
      businessId: 'k1-pay-1',
      execution: 'executed',
    });
  });

  it('answers Accept: text/csv and application/x-ndjson the same way, and JSON otherwise', async () => {
    served.ingest(duplicate('k1', 0));
    const app = served.api();
    const csv = await app.inject({ url: '/api/v1/findings', headers: { accept: 'text/csv' } });
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.headers.vary).toBe('accept');
    expect(csvObjects(csv.body)).toHaveLength(2);
    const ndjson = await app.inject({ url: '/api/v1/findings', headers: { accept: 'application/x-ndjson' } });
    expect(ndjson.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    const lines = ndjson.body
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((line) => [line.key, line.store, line.businessId])).toEqual([
      ['k1', 'A', 'k1-pay-1'],
      ['k1', 'B', 'k1-pay-2'],
    ]);
    const browser = await app.inject({ url: '/api/v1/findings', headers: { accept: 'text/html,*/*;q=0.8' } });
    expect(browser.json().items).toHaveLength(1);
  });

  it("applies the JSON list's filters", async () => {
    served.ingest([...duplicate('k1', 0), ...duplicate('k2', 100), ...duplicate('r1', 0, '', 'refunds')]);
    const app = served.api();
    const keys = async (query: string) => [
      ...new Set(
        csvObjects((await app.inject(`/api/v1/findings?format=csv&${query}`)).body).map((r) => r.key),
      ),
    ];
    expect(await keys('key=k1')).toEqual(['k1']);
    expect(await keys('service=refunds')).toEqual(['r1']);
    expect(await keys('since=2026-01-01T00:01:00Z')).toEqual(['k2']);
    expect(await keys('until=2026-01-01T00:01:00Z')).toEqual(['r1', 'k1']);
    expect(await keys('class=key_collision')).toEqual([]);
  });

  it('exports only its own tenant for a tenant-scoped token', async () => {
    served.ingest([...duplicate('k1', 0, 'acme'), ...duplicate('k2', 10, 'globex')]);
    const app = served.api(TOKENS);
    const acme = await app.inject({ url: '/api/v1/findings?format=csv', headers: bearer('acme-secret') });
    expect(csvObjects(acme.body).map((r) => [r.key, r.tenant])).toEqual([
      ['k1', 'acme'],
      ['k1', 'acme'],
    ]);
    const operator = await app.inject({
      url: '/api/v1/findings?format=ndjson',
      headers: bearer('read-secret'),
    });
    expect(operator.body.trimEnd().split('\n')).toHaveLength(4);
    const anonymous = await app.inject('/api/v1/findings?format=csv');
    expect(anonymous.statusCode).toBe(401);
  });

  it('refuses limit and cursor with an export, and a format it does not know', async () => {
    const app = served.api();
    for (const url of [
      '/api/v1/findings?format=csv&limit=10',
      '/api/v1/findings?format=ndjson&cursor=czE',
      '/api/v1/findings?format=xlsx',
    ]) {
      const response = await app.inject(url);
      expect(response.statusCode, url).toBe(400);
      expect(response.json().error.code).toBe('KS_API_BAD_PARAMETER');
    }
    expect(
      (await app.inject({ url: '/api/v1/findings?limit=10', headers: { accept: 'text/csv' } })).statusCode,
    ).toBe(400);
  });

  it('streams every page of a large store once, in chunks over a real socket', async () => {
    const attempts: Attempt[] = [];
    for (let i = 0; i < 1_200; i++) attempts.push(...duplicate(`k${i}`, i % 600));
    served.ingest(attempts);
    const app = served.api();
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const { port } = app.server.address() as AddressInfo;
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/findings?format=csv`);
      expect(response.headers.get('transfer-encoding')).toBe('chunked');
      expect(response.headers.get('content-length')).toBeNull();
      const rows = csvObjects(await response.text());
      expect(rows).toHaveLength(2_400);
      expect(new Set(rows.map((r) => r.findingId)).size).toBe(1_200);
    } finally {
      await app.close();
    }
  });

  it('reads pages only as the client takes them, and stops when the client hangs up', async () => {
    served.ingest(duplicate('k1', 0));
    const [finding] = served.store.findings.list({}, { limit: 1 }).items;
    // A store with no end of findings: an export that built its file first would never answer.
    let pagesRead = 0;
    const endless = Object.create(served.store) as KeyscopeStore;
    Object.defineProperty(endless, 'findings', {
      value: {
        ...served.store.findings,
        list: (): PageResult<Finding> => {
          pagesRead++;
          const items = Array.from({ length: 500 }, (_, i) => ({ ...finding!, id: `fnd_${pagesRead}_${i}` }));
          return { items, nextCursor: 'czE' };
        },
      },
    });
    const app = served.api([], { store: endless });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const { port } = app.server.address() as AddressInfo;
      const received = await new Promise<number>((resolve, reject) => {
        const call = request({ host: '127.0.0.1', port, path: '/api/v1/findings?format=csv' }, (response) => {
          let bytes = 0;
          response.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes > 1_000_000) {
              call.destroy();
              resolve(bytes);
            }
          });
        });
        call.on('error', (error) => (call.destroyed ? undefined : reject(error)));
        call.end();
      });
      expect(received).toBeGreaterThan(1_000_000);
      // Give the server time to notice; then no page is read any more.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const afterHangUp = pagesRead;
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(pagesRead).toBe(afterHangUp);
      // A page is ~250 KB of rows: what was sent plus what socket buffers hold, not thousands.
      expect(pagesRead).toBeLessThan(100);
    } finally {
      await app.close();
    }
  });
});

describe('GET /api/v1/incidents/:id as CSV and NDJSON', () => {
  it("exports the incident's keys only, one row per execution", async () => {
    served.ingest([...duplicate('k1', 0), ...duplicate('k2', 1), ...duplicate('r1', 0, '', 'refunds')]);
    const app = served.api();
    const incidents = served.store.incidents.list({}, { limit: 10 }).items;
    const payments = incidents.find((incident) => incident.service === 'payments')!;
    const response = await app.inject(`/api/v1/incidents/${payments.id}?format=csv`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-disposition']).toBe(
      `attachment; filename="keyscope-${payments.id}.csv"`,
    );
    const rows = csvObjects(response.body);
    expect(rows.map((r) => r.key).sort()).toEqual(['k1', 'k1', 'k2', 'k2']);
    expect(new Set(rows.map((r) => r.incidentId))).toEqual(new Set([payments.id]));
    const ndjson = await app.inject({
      url: `/api/v1/incidents/${payments.id}`,
      headers: { accept: 'application/x-ndjson' },
    });
    expect(ndjson.body.trimEnd().split('\n')).toHaveLength(4);
    // JSON is still the default.
    expect((await app.inject(`/api/v1/incidents/${payments.id}`)).json().findings).toHaveLength(2);
  });

  it('answers 404 for an unknown incident, and for one a tenant sees none of', async () => {
    served.ingest([
      ...duplicate('k1', 0, 'acme'),
      ...duplicate('k2', 1, 'globex'),
      ...duplicate('r1', 0, 'globex', 'refunds'),
    ]);
    const app = served.api(TOKENS);
    const incidents = served.store.incidents.list({}, { limit: 10 }).items;
    const mixed = incidents.find((incident) => incident.service === 'payments')!;
    const globexOnly = incidents.find((incident) => incident.service === 'refunds')!;
    const unknown = await app.inject({
      url: '/api/v1/incidents/inc_nope?format=csv',
      headers: bearer('read-secret'),
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('KS_API_NOT_FOUND');
    const hidden = await app.inject({
      url: `/api/v1/incidents/${globexOnly.id}?format=csv`,
      headers: bearer('acme-secret'),
    });
    expect(hidden.statusCode).toBe(404);
    const part = await app.inject({
      url: `/api/v1/incidents/${mixed.id}?format=csv`,
      headers: bearer('acme-secret'),
    });
    expect(csvObjects(part.body).map((r) => [r.key, r.tenant])).toEqual([
      ['k1', 'acme'],
      ['k1', 'acme'],
    ]);
  });
});

describe('business ids in the export', () => {
  it('survive the attempt log: a detector restarted on the store reads them back with the first execution', async () => {
    served.ingest([server({ key: 'k1', node: 'a', store: 'A', at: 0, businessId: 'pay_first' })]);
    const restarted = createDetector(undefined, { attemptLog: served.store.attemptLog });
    served.store.transaction(() =>
      served.store.applyChanges(
        restarted.ingest({
          attempts: [server({ key: 'k1', node: 'b', store: 'B', at: 2, businessId: 'pay_second' })],
          activity: [],
          invalid: { outcome: 0, hit: 0, scope: 0 },
        }),
      ),
    );
    const rows = csvObjects((await served.api().inject('/api/v1/findings?format=csv')).body);
    expect(rows.map((r) => r.businessId)).toEqual(['pay_first', 'pay_second']);
  });
});
