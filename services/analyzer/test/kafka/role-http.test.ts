import { afterEach, describe, expect, it } from 'vitest';
import { AuthFailures } from '../../src/auth/auth-failures.ts';
import { resolveServeConfig } from '../../src/config.ts';
import { startRoleHttp } from '../../src/kafka/role-http.ts';

const TOKENS = [
  { token: 'scrape-token-0123456789', role: 'metrics' },
  { token: 'read-token-0123456789ab', role: 'read' },
  { token: 'acme-token-0123456789ab', role: 'read', tenant: 'acme' },
];

let close: (() => Promise<void>) | undefined;

afterEach(async () => {
  await close?.();
  close = undefined;
});

async function startRole(api: Record<string, unknown>) {
  const authFailures = new AuthFailures({ budget: { burst: 3, refillMillis: 600_000, maxAddresses: 100 } });
  const http = await startRoleHttp(resolveServeConfig({ api: { port: 0, ...api } }), {
    logger: { info: () => {}, error: () => {} },
    ready: () => true,
    metrics: async () => 'keyscope_detector_keys{state="in_memory"} 3\n',
    authFailures,
  });
  close = http.close;
  return { url: `http://127.0.0.1:${http.address.port}`, authFailures };
}

const scrape = (url: string, token?: string) =>
  fetch(`${url}/metrics`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

describe("the ingest and detect roles' HTTP", () => {
  it('refuses /metrics without a token when tokens are configured, and answers a token without a tenant', async () => {
    const { url } = await startRole({ tokens: TOKENS });
    const refused = await scrape(url);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('KS_API_UNAUTHENTICATED');
    for (const token of ['scrape-token-0123456789', 'read-token-0123456789ab']) {
      const answered = await scrape(url, token);
      expect(answered.status).toBe(200);
      expect(await answered.text()).toContain('keyscope_detector_keys');
    }
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
  });

  it("refuses /metrics to a tenant's token", async () => {
    const { url } = await startRole({ tokens: TOKENS });
    const refused = await scrape(url, 'acme-token-0123456789ab');
    expect(refused.status).toBe(403);
    expect(await refused.text()).not.toContain('keyscope_detector_keys');
  });

  it('throttles unknown tokens per address as the API does, and counts them', async () => {
    const { url, authFailures } = await startRole({ tokens: TOKENS });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await scrape(url, `guess-${i}-0123456789abcd`)).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(authFailures.snapshot()).toEqual({ missing: 0, invalid: 3, throttled: 2 });
  });

  it('answers /metrics on loopback without a token when no tokens are configured', async () => {
    const { url } = await startRole({});
    expect((await scrape(url)).status).toBe(200);
  });
});
