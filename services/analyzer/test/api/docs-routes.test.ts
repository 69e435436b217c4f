import { createDetector } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiWithPage } from '../../src/api-with-alerts.ts';
import type { ApiToken } from '../../src/auth/auth.ts';
import { PAGE_ROUTES } from '../../src/web/web-routes.ts';

/** Every route fastify registers on any instance this file creates, seen from outside the API's code. */
const registered: { method: string; url: string }[] = [];

vi.mock('fastify', async (importOriginal) => {
  const actual = await importOriginal<typeof import('fastify')>();
  const create = (options: Parameters<typeof actual.default>[0]) => {
    const app = actual.default(options);
    app.addHook('onRoute', (route: RouteOptions) => {
      for (const method of [route.method].flat()) registered.push({ method, url: route.url });
    });
    return app;
  };
  return { ...actual, default: create };
});

let store: KeyscopeStore;

beforeEach(() => {
  store = new KeyscopeStore({ path: ':memory:' });
  registered.length = 0;
});

afterEach(() => store.close());

function api(tokens: ApiToken[] = []): FastifyInstance {
  const detector = createDetector(undefined, { attemptLog: store.attemptLog });
  return createApiWithPage({
    traceLinkTemplate: '',
    store,
    detector: () => detector,
    tokens,
    metrics: async () => 'keyscope_up 1\n',
    ready: () => true,
  });
}

interface Operation {
  parameters: { name: string; description?: string }[];
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}

interface Document {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown[] }>>;
}

describe('the OpenAPI document', () => {
  it('is the same valid OpenAPI 3.1 document at /docs/json and /openapi.json', async () => {
    const app = api();
    const [docsJson, openapiJson] = await Promise.all([
      app.inject('/docs/json'),
      app.inject('/openapi.json'),
    ]);
    expect([docsJson.statusCode, openapiJson.statusCode]).toEqual([200, 200]);
    expect(docsJson.headers['content-type']).toMatch(/^application\/json/);
    expect(openapiJson.json()).toEqual(docsJson.json());
    const validation = await new Validator().validate(docsJson.json());
    expect(validation.errors).toBeUndefined();
    expect(validation.valid).toBe(true);
    expect(docsJson.json().openapi).toBe('3.1.0');
  });

  it('lists every route the API and the page beside it register, with its method; only the web page and stylesheets are left out', async () => {
    const app = api();
    await app.ready();
    const document: Document = (await app.inject('/docs/json')).json();
    const pages = new Set<string>(PAGE_ROUTES);
    const apiRoutes = registered.filter(
      (route) =>
        route.method !== 'HEAD' &&
        !pages.has(route.url) &&
        !route.url.startsWith('/assets/') &&
        !route.url.endsWith('.css'),
    );
    expect(apiRoutes.length).toBeGreaterThan(10);
    const documented = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const routes = apiRoutes.map((route) => `${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`);
    expect([...documented].sort()).toEqual([...routes].sort());
    expect(routes).toEqual(
      expect.arrayContaining(['GET /api/v1/ui-config', 'GET /docs', 'GET /docs/json', 'GET /openapi.json']),
    );
  });

  it('describes every parameter and every field of every answer', async () => {
    const document = (await api().inject('/openapi.json')).json();
    const undescribed: string[] = [];
    const visit = (schema: Record<string, unknown>, where: string) => {
      for (const [name, field] of Object.entries((schema.properties ?? {}) as Record<string, object>)) {
        const property = field as Record<string, unknown>;
        if (property.$ref === undefined && !property.description) undescribed.push(`${where}.${name}`);
        visit(property, `${where}.${name}`);
      }
      if (schema.items !== undefined) visit(schema.items as Record<string, unknown>, `${where}[]`);
    };
    for (const [name, schema] of Object.entries(document.components.schemas)) {
      visit(schema as Record<string, unknown>, name);
    }
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const parameter of operation.parameters) {
          if (!parameter.description) undescribed.push(`${method} ${path} ${parameter.name}`);
        }
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const [type, media] of Object.entries(response.content ?? {})) {
            visit(media.schema ?? {}, `${method} ${path} ${status} ${type}`);
          }
        }
      }
    }
    expect(undescribed).toEqual([]);
    expect(document.components.schemas.Attempt.properties.keyFrom.description).toMatch(/server span/);
  });

  it('needs no token on any operation when none are configured, and says so', async () => {
    const app = api();
    const document = (await app.inject('/openapi.json')).json();
    expect(document.security).toBeUndefined();
    for (const item of Object.values(document.paths as Record<string, Record<string, Operation>>)) {
      for (const operation of Object.values(item))
        expect(Object.keys(operation.responses)).not.toContain('401');
    }
    const page = (await app.inject('/docs')).body;
    expect(page).not.toContain('Needs a bearer token');
    expect(page.match(/No token needed: none are configured\./g)).toHaveLength(
      Object.values(document.paths as Record<string, object>).flatMap((item) => Object.keys(item)).length,
    );

    const guarded = api([{ token: 'admin-secret-token', role: 'admin', name: 'alice' }]);
    const withTokens = (await guarded.inject('/openapi.json')).json();
    expect(withTokens.security).toEqual([{ bearer: [] }]);
    expect(Object.keys(withTokens.paths['/api/v1/findings'].get.responses)).toContain('401');
    expect(withTokens.paths['/healthz'].get.security).toEqual([]);
    const reference = (await guarded.inject('/docs')).body;
    expect(reference).toMatch(
      /id="get-api-v1-findings"[\s\S]*Needs a bearer token[\s\S]*id="get-healthz"[\s\S]*Public/,
    );
  });

  it('points every $ref at a schema the document holds', async () => {
    const text = (await api().inject('/openapi.json')).body;
    const document = JSON.parse(text);
    const refs = [...text.matchAll(/"\$ref":"#\/components\/schemas\/(\w+)"/g)].map((match) => match[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const name of refs) expect(document.components.schemas[name]).toBeDefined();
  });
});

describe('the API reference at /docs', () => {
  it('is an HTML page with a section per operation, under a policy that allows no script and nothing inline', async () => {
    const app = api();
    const page = await app.inject('/docs');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const policy = String(page.headers['content-security-policy']);
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("style-src 'self'");
    expect(policy).not.toContain('unsafe');
    expect(policy).not.toContain('script-src');
    // Every schema as a table of its fields, nested ones by their path.
    expect(page.body).toContain('data-field="keyFrom"');
    expect(page.body).toContain('data-field="routing.affinityBroken"');
    expect(page.body).not.toMatch(/<script|<style|\sstyle=|\son\w+=/i);
    const document: Document = (await app.inject('/docs/json')).json();
    for (const [path, item] of Object.entries(document.paths)) {
      for (const method of Object.keys(item)) {
        expect(page.body).toContain(`data-operation="${method.toUpperCase()} ${path}"`);
      }
    }
  });

  it('links only to its own stylesheet, which answers 304 to its ETag', async () => {
    const app = api();
    const page = (await app.inject('/docs')).body;
    const links = [...page.matchAll(/\s(?:href|src)="([^"#]+)"/g)].map((match) => match[1]);
    expect(links.sort()).toEqual(['/docs/json', '/docs/reference.css', '/openapi.json', 'data:,']);
    const stylesheet = await app.inject('/docs/reference.css');
    expect(stylesheet.statusCode).toBe(200);
    expect(stylesheet.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(stylesheet.body).toContain('.operation');
    const again = await app.inject({
      url: '/docs/reference.css',
      headers: { 'if-none-match': String(stylesheet.headers.etag) },
    });
    expect(again.statusCode).toBe(304);
  });

  it('needs no token, as /healthz, while the API routes do', async () => {
    const app = api([{ token: 'admin-secret-token', role: 'admin', name: 'alice' }]);
    for (const url of ['/docs', '/docs/json', '/openapi.json', '/docs/reference.css']) {
      expect((await app.inject(url)).statusCode, url).toBe(200);
    }
    expect((await app.inject('/api/v1/incidents')).statusCode).toBe(401);
  });
});
