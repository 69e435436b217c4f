import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuthFailures, clientOf } from '../../src/auth/auth-failures.ts';
import { resolveServeConfig } from '../../src/config.ts';
import { startServe } from '../../src/serve.ts';
import { serviceScratch } from '../settings/service-scratch.ts';

const ADMIN = 'admin-token-0123456789';
const SCRAPER = 'metrics-token-0123456789';

const scratch = serviceScratch('auth');

/** A budget no test outlasts: nothing refills while a test runs. */
const BUDGET = { burst: 5, refillMillis: 600_000 };

async function startWithTokens(authFailureBudget: Record<string, number> = BUDGET): Promise<string> {
  const config = resolveServeConfig({
    api: {
      port: 0,
      authFailureBudget,
      tokens: [
        { token: ADMIN, role: 'admin' },
        { token: SCRAPER, role: 'metrics' },
      ],
    },
    db: { path: join(scratch.dir, 'keyscope.db') },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
  });
  scratch.service = await startServe(config, { logger: { info: () => {}, error: () => {} } });
  return `http://127.0.0.1:${scratch.service.addresses.api.port}`;
}

function get(url: string, token?: string): Promise<Response> {
  return fetch(url, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
}

type ErrorBody = { error: { code: string } };

function failures(metrics: string, reason: string): number {
  const match = new RegExp(`^keyscope_auth_failures_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(
    metrics,
  );
  return match === null ? 0 : Number(match[1]);
}

describe('failed bearer tokens on the running API', () => {
  it('answers 429 with Retry-After once an address has presented its burst of unknown tokens', async () => {
    const api = await startWithTokens();
    const statuses: number[] = [];
    for (let i = 0; i < BUDGET.burst + 5; i++) {
      const response = await get(`${api}/api/v1/findings`, `guess-${i}-0123456789abcdef`);
      statuses.push(response.status);
      if (response.status === 429) {
        expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
        expect(((await response.json()) as ErrorBody).error.code).toBe('KS_API_AUTH_THROTTLED');
      } else {
        expect(((await response.json()) as ErrorBody).error.code).toBe('KS_API_UNAUTHENTICATED');
      }
    }
    expect(statuses.slice(0, BUDGET.burst)).toEqual(Array(BUDGET.burst).fill(401));
    expect(statuses.slice(BUDGET.burst)).toEqual(Array(5).fill(429));
  });

  it('keeps answering a token that authenticated from the address while guesses from it are throttled', async () => {
    const api = await startWithTokens();
    expect((await get(`${api}/api/v1/findings`, ADMIN)).status).toBe(200);
    for (let i = 0; i < BUDGET.burst + 3; i++) {
      await (await get(`${api}/api/v1/findings`, `guess-${i}-0123456789abcdef`)).arrayBuffer();
    }
    expect((await get(`${api}/api/v1/findings`, 'one-more-guess-0123456789')).status).toBe(429);
    const started = performance.now();
    expect((await get(`${api}/api/v1/findings`, ADMIN)).status).toBe(200);
    expect(performance.now() - started).toBeLessThan(1_000);
    // A known token that never authenticated from here is refused like a guess: 429 says nothing of it.
    expect((await get(`${api}/metrics`, SCRAPER)).status).toBe(429);
  });

  it('counts refused tokens by reason in keyscope_auth_failures_total', async () => {
    const api = await startWithTokens();
    // The scraper authenticates first, so the throttling below does not refuse it.
    expect(failures(await (await get(`${api}/metrics`, SCRAPER)).text(), 'invalid')).toBe(0);
    await (await get(`${api}/api/v1/findings`)).arrayBuffer();
    await (await get(`${api}/api/v1/findings`, undefined)).arrayBuffer();
    const guesses = BUDGET.burst + 4;
    for (let i = 0; i < guesses; i++) {
      await (await get(`${api}/api/v1/incidents`, `guess-${i}-0123456789abcdef`)).arrayBuffer();
    }
    const metrics = await (await get(`${api}/metrics`, SCRAPER)).text();
    expect(failures(metrics, 'missing')).toBe(2);
    expect(failures(metrics, 'invalid')).toBe(BUDGET.burst);
    expect(failures(metrics, 'throttled')).toBe(4);
  });

  it('lets an address guess again once api.authFailureBudget.refillMillis has passed', async () => {
    const api = await startWithTokens({ burst: 2, refillMillis: 400 });
    const guess = async () => (await get(`${api}/api/v1/findings`, 'a-wrong-token-0123456789')).status;
    expect([await guess(), await guess(), await guess()]).toEqual([401, 401, 429]);
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(await guess()).toBe(401);
  });

  it('spends no budget on requests without a token', async () => {
    const api = await startWithTokens();
    for (let i = 0; i < BUDGET.burst + 5; i++) {
      expect((await get(`${api}/api/v1/findings`)).status).toBe(401);
    }
    expect((await get(`${api}/api/v1/findings`, 'a-first-guess-0123456789')).status).toBe(401);
  });
});

describe('AuthFailures', () => {
  it('gives an address one more attempt per refill interval once its burst is spent', () => {
    let now = 0;
    const budget = { burst: 2, refillMillis: 1_000, maxAddresses: 10 };
    const table = new AuthFailures({ budget, now: () => now });
    table.failed('10.0.0.1', 'invalid');
    table.failed('10.0.0.1', 'invalid');
    expect(table.waitMillis('10.0.0.1', undefined)).toBe(1_000);
    expect(table.waitMillis('10.0.0.2', undefined)).toBe(0);
    now = 400;
    expect(table.waitMillis('10.0.0.1', undefined)).toBe(600);
    now = 1_000;
    expect(table.waitMillis('10.0.0.1', undefined)).toBe(0);
    table.failed('10.0.0.1', 'invalid');
    expect(table.waitMillis('10.0.0.1', undefined)).toBe(1_000);
  });

  it('holds at most maxAddresses addresses, evicting the least recently seen', () => {
    const table = new AuthFailures({
      budget: { burst: 1, refillMillis: 60_000, maxAddresses: 3 },
      now: () => 0,
    });
    for (const address of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) table.failed(address, 'invalid');
    expect(table.waitMillis('10.0.0.1', undefined)).toBeGreaterThan(0);
    table.failed('10.0.0.4', 'invalid');
    expect(table.addresses).toBe(3);
    // 10.0.0.1 was seen last (by waitMillis), so 10.0.0.2 made room.
    expect(table.waitMillis('10.0.0.1', undefined)).toBeGreaterThan(0);
    expect(table.waitMillis('10.0.0.2', undefined)).toBe(0);
  });

  it('budgets IPv4-mapped addresses as IPv4 and IPv6 addresses by their /64', () => {
    expect(clientOf('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(clientOf('2001:db8:0:1:aaaa::1')).toBe('2001:db8:0:1::/64');
    expect(clientOf('2001:db8::1:ffff:1:2:3')).toBe('2001:db8:0:1::/64');
    expect(clientOf('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientOf('::1')).toBe('0:0:0:0::/64');
    expect(clientOf(undefined)).toBe('unknown');
  });
});
