import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, executedTwice, freePort, startConfigured } from './configured-keyscope.ts';

const ADMIN = 'a-long-random-admin-token';
const READ = 'a-long-random-read-token!';
const ACME = 'acme-only-read-token-1234';

/** The parts of the API's answers these tests read. */
interface ApiBody {
  items: Array<{ id: string; key: string }>;
  acknowledgedBy?: string;
  traceLinkTemplate?: string;
}

async function call(
  keyscope: ConfiguredKeyscope,
  path: string,
  options: { token?: string; method?: string } = {},
): Promise<{ status: number; body: ApiBody }> {
  const response = await fetch(keyscope.apiUrl(path), {
    method: options.method ?? 'GET',
    headers: options.token === undefined ? {} : { authorization: `Bearer ${options.token}` },
  });
  const text = await response.text();
  return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as ApiBody };
}

/**
 * A GET of the findings bearing `token`, sent from the loopback address `from` (each of
 * 127.0.0.0/8 is a client address of its own to the API), with the answer's Retry-After.
 */
function getFrom(
  keyscope: ConfiguredKeyscope,
  from: string,
  token: string,
): Promise<{ status: number; retryAfter: string | undefined }> {
  const { host, port } = keyscope.running.addresses.api;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        localAddress: from,
        path: '/api/v1/findings',
        headers: { authorization: `Bearer ${token}` },
      },
      (response) => {
        response.resume();
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The statuses of `count` GETs in turn from `from`, each bearing an unknown token. */
async function guesses(keyscope: ConfiguredKeyscope, from: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let guess = 0; guess < count; guess++) {
    statuses.push((await getFrom(keyscope, from, `wrong-guess-${guess}`)).status);
  }
  return statuses;
}

/** A GET with a Host header of our choosing (fetch sends the URL's). */
function getWithHost(host: string, port: number, hostHeader: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path, headers: { host: hostHeader } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('api.* with tokens, from a config file', () => {
  let keyscope: ConfiguredKeyscope;
  let incidentId: string;

  beforeAll(async () => {
    keyscope = await startConfigured({
      file: {
        api: {
          traceLinkTemplate: 'https://jaeger.example/trace/{traceId}',
          tokens: [
            { token: ADMIN, role: 'admin', name: 'alice' },
            { token: READ, role: 'read' },
            { token: ACME, role: 'read', tenant: 'acme' },
          ],
        },
      },
    });
    const answers = await Promise.all([
      keyscope.exportSpans(executedTwice('acme-key', { tenant: 'acme' })),
      keyscope.exportSpans(executedTwice('globex-key', { tenant: 'globex' })),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const incidents = await call(keyscope, '/api/v1/incidents', { token: READ });
    incidentId = incidents.body.items[0]!.id;
  });
  afterAll(() => keyscope.stop());

  it('api.tokens[].token: a request bearing a configured token is answered, one without is refused', async () => {
    expect((await call(keyscope, '/api/v1/findings')).status).toBe(401);
    expect((await call(keyscope, '/api/v1/findings', { token: 'not-a-configured-token' })).status).toBe(401);
    const answered = await call(keyscope, '/api/v1/findings', { token: READ });
    expect(answered.status).toBe(200);
    expect(answered.body.items.map((finding) => finding.key).sort()).toEqual(['acme-key', 'globex-key']);
  });

  it('api.tokens[].role: a read token may not acknowledge an incident, an admin token may', async () => {
    const refused = await call(keyscope, `/api/v1/incidents/${incidentId}/ack`, {
      token: READ,
      method: 'POST',
    });
    expect(refused.status).toBe(403);
    const acknowledged = await call(keyscope, `/api/v1/incidents/${incidentId}/ack`, {
      token: ADMIN,
      method: 'POST',
    });
    expect(acknowledged.status).toBe(200);
  });

  it('api.tokens[].name: an acknowledgement is recorded under the token’s name', async () => {
    await call(keyscope, `/api/v1/incidents/${incidentId}/ack`, { token: ADMIN, method: 'POST' });
    const incident = await call(keyscope, `/api/v1/incidents/${incidentId}`, { token: READ });
    expect(incident.body.acknowledgedBy).toBe('alice');
  });

  it('api.tokens[].tenant: a token of one tenant sees only that tenant’s findings', async () => {
    const findings = await call(keyscope, '/api/v1/findings', { token: ACME });
    expect(findings.status).toBe(200);
    expect(findings.body.items.map((finding) => finding.key)).toEqual(['acme-key']);
  });

  it('api.traceLinkTemplate: the web page is given the template to link trace ids with', async () => {
    const config = await call(keyscope, '/api/v1/ui-config', { token: READ });
    expect(config.body.traceLinkTemplate).toBe('https://jaeger.example/trace/{traceId}');
  });
});

describe('api.* without tokens, from KEYSCOPE_* variables and flags', () => {
  const host = '127.0.0.2';
  let keyscope: ConfiguredKeyscope;
  let port: number;

  beforeAll(async () => {
    port = await freePort(host);
    keyscope = await startConfigured({
      env: { KEYSCOPE_API_HOST: host, KEYSCOPE_API_PUBLIC_URL: 'https://keyscope.example' },
      flags: ['--api-port', String(port)],
    });
  });
  afterAll(() => keyscope.stop());

  it('api.host: the API listens on the configured address and on no other', async () => {
    expect(keyscope.running.addresses.api.host).toBe(host);
    expect(await getWithHost(host, port, `${host}:${port}`, '/healthz')).toBe(200);
    await expect(getWithHost('127.0.0.1', port, `127.0.0.1:${port}`, '/healthz')).rejects.toThrow(
      /ECONNREFUSED/,
    );
  });

  it('api.port: the API answers on the configured port', async () => {
    expect(keyscope.running.addresses.api.port).toBe(port);
    expect((await fetch(`http://${host}:${port}/healthz`)).status).toBe(200);
  });

  it('api.publicUrl: requests addressed to its host are answered, to another name refused', async () => {
    expect(await getWithHost(host, port, 'keyscope.example', '/api/v1/findings')).toBe(200);
    expect(await getWithHost(host, port, 'elsewhere.example', '/api/v1/findings')).toBe(403);
  });
});

describe('api.authFailureBudget.*, from a config file and KEYSCOPE_* variables', () => {
  let keyscope: ConfiguredKeyscope;

  beforeAll(async () => {
    keyscope = await startConfigured({
      file: { api: { tokens: [{ token: READ, role: 'read' }], authFailureBudget: { maxAddresses: 1 } } },
      env: {
        KEYSCOPE_API_AUTH_FAILURE_BUDGET_BURST: '3',
        KEYSCOPE_API_AUTH_FAILURE_BUDGET_REFILL_MILLIS: '2500',
      },
    });
  });
  afterAll(() => keyscope.stop());

  it('api.authFailureBudget.burst: an address is refused with 429 after that many unknown tokens', async () => {
    expect(await guesses(keyscope, '127.0.0.3', 5)).toEqual([401, 401, 401, 429, 429]);
  });

  it('api.authFailureBudget.refillMillis: a throttled address may guess again once that long has passed', async () => {
    const from = '127.0.0.4';
    const spentAt = Date.now();
    expect(await guesses(keyscope, from, 4)).toEqual([401, 401, 401, 429]);
    // One guess back takes 2.5 s: Retry-After rounds it up to whole seconds.
    expect((await getFrom(keyscope, from, 'wrong-guess-x')).retryAfter).toBe('3');
    // At 1.2 s (past the default refill of 1 s) the address is still throttled …
    await new Promise((resolve) => setTimeout(resolve, spentAt + 1_200 - Date.now()));
    expect((await getFrom(keyscope, from, 'wrong-guess-y')).status).toBe(429);
    // … and past 2.5 s it may present one unknown token, and no second.
    await new Promise((resolve) => setTimeout(resolve, spentAt + 2_700 - Date.now()));
    expect(await guesses(keyscope, from, 2)).toEqual([401, 429]);
  });

  it('api.authFailureBudget.maxAddresses: set to 1, a second address’s guess forgets the first’s budget', async () => {
    expect(await guesses(keyscope, '127.0.0.5', 4)).toEqual([401, 401, 401, 429]);
    expect(await guesses(keyscope, '127.0.0.6', 1)).toEqual([401]);
    // 127.0.0.5 is remembered no more: it has its whole burst again.
    expect(await guesses(keyscope, '127.0.0.5', 4)).toEqual([401, 401, 401, 429]);
  });
});
