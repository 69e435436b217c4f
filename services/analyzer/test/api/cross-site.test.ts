import { server } from '@keyscope/testkit';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApiToken } from '../../src/auth/auth.ts';
import { createServedStore, type ServedStore } from './served-store.ts';

let served: ServedStore;
let incidentId: string;

beforeEach(async () => {
  served = createServedStore();
  served.ingest([
    server({ key: 'k1', node: 'a', store: 'A', at: 0 }),
    server({ key: 'k1', node: 'b', store: 'B', at: 2 }),
  ]);
  incidentId = served.detector.incidents()[0]!.id;
});

afterEach(() => served.close());

/** Without tokens: the API on 127.0.0.1:8080, as a browser on the same machine addresses it. */
function loopbackApi(options: { publicUrl?: string } = {}): FastifyInstance {
  return served.api([], { listenHost: '127.0.0.1', ...options });
}

async function acknowledged(app: FastifyInstance): Promise<boolean> {
  return (
    await app.inject({ url: `/api/v1/incidents/${incidentId}`, headers: { host: '127.0.0.1:8080' } })
  ).json().acknowledged;
}

describe('without tokens, a page on another site', () => {
  it('cannot acknowledge an incident with a simple text/plain POST', async () => {
    const app = loopbackApi();
    const response = await app.inject({
      method: 'POST',
      url: `/api/v1/incidents/${incidentId}/ack`,
      headers: { host: '127.0.0.1:8080', origin: 'https://evil.example', 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('KS_API_CROSS_SITE');
    expect(await acknowledged(app)).toBe(false);
  });

  it('cannot resolve an incident even when the browser sends no Origin', async () => {
    const app = loopbackApi();
    const response = await app.inject({
      method: 'POST',
      url: `/api/v1/incidents/${incidentId}/resolve`,
      headers: { host: '127.0.0.1:8080', 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'a=b',
    });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('KS_API_CROSS_SITE');
  });

  it.each([
    ['another site', 'https://evil.example'],
    ['another port of localhost', 'http://127.0.0.1:3000'],
    ['a sandboxed frame', 'null'],
  ])('cannot read incidents from %s', async (_name, origin) => {
    const response = await loopbackApi().inject({
      url: '/api/v1/incidents',
      headers: { host: '127.0.0.1:8080', origin },
    });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('KS_API_CROSS_SITE');
  });

  it.each([
    ['a rebound DNS name', 'evil.example:8080'],
    ['a rebound name without a port', 'evil.example'],
    ['a name that only ends like localhost', 'evil-localhost:8080'],
  ])('cannot read incidents through %s (its Host)', async (_name, host) => {
    const response = await loopbackApi().inject({ url: '/api/v1/incidents', headers: { host } });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('KS_API_FOREIGN_HOST');
    expect(JSON.stringify(response.json())).not.toContain('"items"');
  });

  it('cannot load the page itself through a rebound name', async () => {
    const response = await loopbackApi().inject({ url: '/', headers: { host: 'evil.example:8080' } });
    expect(response.statusCode).toBe(403);
    expect(response.json().error.code).toBe('KS_API_FOREIGN_HOST');
  });
});

describe('without tokens, keyscope’s own page and local tools', () => {
  it('acknowledge with the header the page sends, from the page’s own origin', async () => {
    const app = loopbackApi();
    const response = await app.inject({
      method: 'POST',
      url: `/api/v1/incidents/${incidentId}/ack`,
      headers: { host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080', 'x-keyscope-client': 'web' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ acknowledged: true, acknowledgedBy: 'loopback' });
  });

  it('resolve with content-type: application/json and no body (curl)', async () => {
    const response = await loopbackApi().inject({
      method: 'POST',
      url: `/api/v1/incidents/${incidentId}/resolve`,
      headers: { host: 'localhost:8080', 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().status).toBe('resolved');
  });

  it.each([
    'localhost:8080',
    'LOCALHOST',
    'keyscope.localhost:8080',
    '127.0.0.1:8080',
    '127.1:8080',
    '[::1]:8080',
  ])('read with Host %s', async (host) => {
    const response = await loopbackApi().inject({ url: '/api/v1/incidents', headers: { host } });
    expect(response.statusCode).toBe(200);
  });

  it('read through api.publicUrl’s name and origin (a local proxy)', async () => {
    const app = loopbackApi({ publicUrl: 'https://keyscope.example.internal' });
    const proxied = await app.inject({
      url: '/api/v1/incidents',
      headers: { host: 'keyscope.example.internal', origin: 'https://keyscope.example.internal' },
    });
    expect(proxied.statusCode).toBe(200);
    const rewritten = await app.inject({
      url: '/api/v1/incidents',
      headers: { host: '127.0.0.1:8080', origin: 'https://keyscope.example.internal' },
    });
    expect(rewritten.statusCode).toBe(200);
  });

  it('read through the name api.host is given', async () => {
    const app = served.api([], { listenHost: 'keyscope-box.lan' });
    expect(
      (await app.inject({ url: '/healthz', headers: { host: 'keyscope-box.lan:8080' } })).statusCode,
    ).toBe(200);
  });
});

describe('with tokens', () => {
  const TOKENS: ApiToken[] = [{ token: 'admin-secret-for-tests', role: 'admin', name: 'alice' }];

  it('answers any Host and Origin that bring a bearer token, as behind a proxy', async () => {
    const app = served.api(TOKENS, { listenHost: '0.0.0.0' });
    const response = await app.inject({
      method: 'POST',
      url: `/api/v1/incidents/${incidentId}/ack`,
      headers: {
        host: 'keyscope.example.com',
        origin: 'https://dashboards.example.com',
        authorization: 'Bearer admin-secret-for-tests',
      },
    });
    expect(response.statusCode).toBe(200);
    expect(response.json().acknowledgedBy).toBe('alice');
  });
});
