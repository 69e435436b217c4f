import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import {
  API_REFERENCE_CONTENT_SECURITY_POLICY,
  API_REFERENCE_STYLESHEET_URL,
  renderApiReference,
} from './api-reference.ts';
import type { JsonSchema } from './api-schemas.ts';
import { buildOpenApi, type OpenApiDocument, type RouteDoc, type RouteSchema } from './openapi.ts';

/** Where the OpenAPI document is served: fastify-swagger's place, and the conventional one. */
export const OPENAPI_URLS = ['/openapi.json', '/docs/json'] as const;

const STYLESHEET = readFileSync(new URL('./api-reference.css', import.meta.url), 'utf8');
const STYLESHEET_ETAG = `"${createHash('sha256').update(STYLESHEET).digest('base64url').slice(0, 22)}"`;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Left out of the OpenAPI document: the web page's routes, a stylesheet (`collectRouteDocs`). */
    hide?: boolean;
  }
}

/** A route whose config has `hide: true` is left out of the document: the web page's, a stylesheet. */
const HIDDEN = { hide: true } as const;

const DOCUMENTED_METHODS = ['GET', 'POST'] as const;

/**
 * Collects every route registered on `app` from now on, with its schema, for the OpenAPI document:
 * call it before registering any route. A route must declare its summary and response schemas,
 * or `config: { hide: true }`: one that does neither stops the server from starting, so none goes
 * undocumented.
 */
export function collectRouteDocs(app: FastifyInstance): RouteDoc[] {
  const docs: RouteDoc[] = [];
  app.addHook('onRoute', (route: RouteOptions) => {
    if (route.config?.hide === true) return;
    const schema = route.schema as Partial<RouteSchema> | undefined;
    for (const method of [route.method].flat()) {
      // fastify adds a HEAD route for every GET: the GET's document stands for both.
      if (method === 'HEAD') continue;
      const documented = DOCUMENTED_METHODS.find((known) => known === method);
      if (documented === undefined) {
        throw new Error(`${method} ${route.url}: the document describes GET and POST only`);
      }
      if (schema?.summary === undefined || schema.response === undefined) {
        throw new Error(
          `${method} ${route.url} declares no summary and response schemas: document it, or hide it`,
        );
      }
      docs.push({ method: documented, url: route.url, schema: schema as RouteSchema });
    }
  });
  return docs;
}

export interface DocsRouteOptions {
  /** Every route's doc, as `collectRouteDocs` collects them; read at the first request. */
  docs: readonly RouteDoc[];
  /** Tokens are configured: the document says which operations need one. */
  tokens: boolean;
}

const DOCUMENT_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'This OpenAPI 3.1 document; its own schema is the OpenAPI specification’s.',
  // The document is written by buildOpenApi, and its shape is OpenAPI's: the serializer keeps it whole.
  additionalProperties: true,
};

const PAGE_SCHEMA: JsonSchema = { type: 'string', description: 'The reference as an HTML page.' };

const OPENAPI: RouteSchema = {
  summary: 'This OpenAPI document.',
  security: [],
  response: { 200: DOCUMENT_SCHEMA },
};

const REFERENCE: RouteSchema = {
  summary: 'This OpenAPI document as a page to read.',
  security: [],
  response: { 200: PAGE_SCHEMA },
  produces: { 'text/html': PAGE_SCHEMA },
};

/**
 * The OpenAPI document at /openapi.json and /docs/json, and the reference page rendered from it at
 * /docs. Public, as /healthz is: they describe the API, and hold no data. The document is built at
 * the first request, from every route registered by then.
 */
export async function docsRoutes(app: FastifyInstance, options: DocsRouteOptions): Promise<void> {
  let document: OpenApiDocument | undefined;
  let page: string | undefined;
  const openApi = () => (document ??= buildOpenApi(options.docs, { tokens: options.tokens }));

  for (const url of OPENAPI_URLS) app.get(url, { schema: OPENAPI }, async () => openApi());
  app.get('/docs', { schema: REFERENCE }, async (_request, reply) =>
    reply
      .headers({
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': API_REFERENCE_CONTENT_SECURITY_POLICY,
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
        'cache-control': 'no-cache',
      })
      .send((page ??= renderApiReference(openApi()))),
  );
  app.get(
    API_REFERENCE_STYLESHEET_URL,
    { config: HIDDEN },
    async (request: FastifyRequest, reply: FastifyReply) => {
      reply.headers({
        etag: STYLESHEET_ETAG,
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      });
      if (request.headers['if-none-match'] === STYLESHEET_ETAG) return reply.status(304).send();
      return reply.type('text/css; charset=utf-8').send(STYLESHEET);
    },
  );
}
