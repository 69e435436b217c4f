import { incidentUrl } from '@keyscope/alerts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  READ_TOKEN,
  type RunningKeyscope,
  startKeyscope,
  TRACE_LINK_TEMPLATE,
} from './running-keyscope.ts';

/** What `keyscope serve` answers for the page itself, before any browser runs it. */

let keyscope: RunningKeyscope;

beforeAll(async () => {
  keyscope = await startKeyscope({ tokens: true });
});

afterAll(async () => {
  await keyscope?.stop();
});

describe('the page routes', () => {
  it.each(['/', '/incidents/inc_0123', '/keys/a%2Fb%20c', '/keys?key=a%2Fb', '/scopes'])(
    'answer %s with the shell under a policy that allows no inline script',
    async (path) => {
      const response = await fetch(`${keyscope.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      const policy = response.headers.get('content-security-policy')!;
      expect(policy).toContain("script-src 'self'");
      expect(policy).not.toContain('unsafe-inline');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await response.text()).toContain('<script defer src="/assets/page.js"></script>');
    },
  );

  it('serves the page at the path alerts link to', async () => {
    const link = incidentUrl(keyscope.url, 'inc_0123');
    expect(new URL(link).pathname).toBe('/incidents/inc_0123');
    expect((await fetch(link)).status).toBe(200);
  });

  it('serves the bundled script and stylesheet, revalidated by ETag', async () => {
    for (const [path, type] of [
      ['/assets/page.js', /^text\/javascript/],
      ['/assets/page.css', /^text\/css/],
    ] as const) {
      const response = await fetch(`${keyscope.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(type);
      expect((await response.text()).length).toBeGreaterThan(1000);
      const etag = response.headers.get('etag')!;
      const again = await fetch(`${keyscope.url}${path}`, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
    }
  });

  it('tells the page who the token is and where trace ids link, and refuses without a token', async () => {
    const refused = await fetch(`${keyscope.url}/api/v1/ui-config`);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('KS_API_UNAUTHENTICATED');
    for (const [token, role, name] of [
      [ADMIN_TOKEN, 'admin', 'alice'],
      [READ_TOKEN, 'read', 'bob'],
    ] as const) {
      const response = await fetch(`${keyscope.url}/api/v1/ui-config`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(await response.json()).toEqual({
        traceLinkTemplate: TRACE_LINK_TEMPLATE,
        principal: { name, role, tenant: null },
      });
    }
  });
});
