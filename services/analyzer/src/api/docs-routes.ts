import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  API_REFERENCE_CONTENT_SECURITY_POLICY,
  API_REFERENCE_STYLESHEET_URL,
  renderApiReference,
} from './api-reference.ts';
import { buildOpenApi, type OpenApiDocument, type RouteDoc } from './openapi.ts';

/** Where the OpenAPI document is served: fastify-swagger's place, and the conventional one. */
export const OPENAPI_URLS = ['/openapi.json', '/docs/json'] as const;

const STYLESHEET = readFileSync(new URL('./api-reference.css', import.meta.url), 'utf8');
const STYLESHEET_ETAG = `"${createHash('sha256').update(STYLESHEET).digest('base64url').slice(0, 22)}"`;

/**
 * The OpenAPI document at /openapi.json and /docs/json, and the reference page rendered from it at
 * /docs. Public, as /healthz is: they describe the API, and hold no data. Call after every other
 * route has pushed its doc to `docs`: these push their own, and the document is built at the
 * first request from all of them.
 */
export function docsRoutes(app: FastifyInstance, docs: RouteDoc[]): void {
  for (const url of OPENAPI_URLS) {
    docs.push({ method: 'GET', url, summary: 'This OpenAPI document.', public: true });
  }
  docs.push({
    method: 'GET',
    url: '/docs',
    summary: 'This OpenAPI document as a page to read.',
    public: true,
    contentType: 'text/html',
  });

  let document: OpenApiDocument | undefined;
  let page: string | undefined;
  const openApi = () => (document ??= buildOpenApi(docs));

  for (const url of OPENAPI_URLS) app.get(url, async () => openApi());
  app.get('/docs', async (_request, reply) =>
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
  app.get(API_REFERENCE_STYLESHEET_URL, async (request: FastifyRequest, reply: FastifyReply) => {
    reply.headers({
      etag: STYLESHEET_ETAG,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
    });
    if (request.headers['if-none-match'] === STYLESHEET_ETAG) return reply.status(304).send();
    return reply.type('text/css; charset=utf-8').send(STYLESHEET);
  });
}
