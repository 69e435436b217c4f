import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Reader } from '../auth/auth.ts';
import { type PageBundle, pageBundle } from './page-bundle.ts';
import { PAGE_CONTENT_SECURITY_POLICY, PAGE_SHELL } from './page-shell.ts';

export interface WebRouteOptions {
  /** The API's authenticator, so /api/v1/ui-config refuses exactly what the other routes refuse. */
  authenticate: (authorization: string | undefined, remoteAddress: string | undefined) => Reader;
  /** `api.traceLinkTemplate`: a URL with `{traceId}` (and optionally `{spanId}`); '' for none. */
  traceLinkTemplate: string;
}

/** What the page learns about itself: who the token is, and where trace ids link to. */
export interface UiConfig {
  traceLinkTemplate: string;
  principal: { name: string; role: 'read' | 'admin'; tenant: string | null };
}

/** The page's own routes are not the API's: the OpenAPI document leaves them out. */
const HIDDEN = { hide: true } as const;

const text = (description: string) => ({ type: 'string', description }) as const;

/** `/api/v1/ui-config`'s schema, which fastify serializes its answer with and the OpenAPI document shows. */
const UI_CONFIG_SCHEMA = {
  summary: "The web page's settings: who the token is, and where trace ids link to.",
  response: {
    200: {
      type: 'object',
      description: "The web page's settings.",
      properties: {
        traceLinkTemplate: text(
          '`api.traceLinkTemplate`: a URL with `{traceId}` (and optionally `{spanId}`); empty for none.',
        ),
        principal: {
          type: 'object',
          description: 'Who the token is.',
          properties: {
            name: text('The token’s name (`loopback` without tokens).'),
            role: {
              type: 'string',
              enum: ['read', 'admin'],
              description: '`admin` may acknowledge and resolve.',
            },
            tenant: { type: ['string', 'null'], description: 'The tenant it sees; null for every tenant.' },
          },
          required: ['name', 'role', 'tenant'],
          additionalProperties: false,
        },
      },
      required: ['traceLinkTemplate', 'principal'],
      additionalProperties: false,
    },
    // Every refusal, in the shape of the server's error handler: { error: { code, message } }.
    '4xx': {
      type: 'object',
      description: 'A refusal.',
      properties: {
        error: {
          type: 'object',
          properties: { code: text('The error code.'), message: text('Why.') },
          required: ['code', 'message'],
          additionalProperties: false,
        },
      },
      required: ['error'],
      additionalProperties: false,
    },
  },
} as const;

/**
 * Paths of the page itself; alerts link to `/incidents/:id`, so that one is a contract. `/keys?key=`
 * is where the header's key search lands without script, and the form of a key page's address for
 * keys no path segment can carry (`.` and `..`).
 */
export const PAGE_ROUTES = ['/', '/incidents/:id', '/keys', '/keys/*', '/scopes', '/routing-events'] as const;

/**
 * The web page: one HTML shell for every page route, the bundled script and stylesheet, and
 * /api/v1/ui-config. Serve registers it on the API's server (api-with-alerts.ts), whose error
 * replies and cross-site guard it shares; the page reads only the public API.
 */
export async function webRoutes(app: FastifyInstance, options: WebRouteOptions): Promise<void> {
  for (const url of PAGE_ROUTES) {
    app.get(url, { config: HIDDEN }, async (_request, reply) =>
      reply
        .headers({
          'content-type': 'text/html; charset=utf-8',
          'content-security-policy': PAGE_CONTENT_SECURITY_POLICY,
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
          'cache-control': 'no-store',
        })
        .send(PAGE_SHELL),
    );
  }

  const asset = (type: string, pick: (bundle: PageBundle) => string) =>
    async function serveAsset(request: FastifyRequest, reply: FastifyReply) {
      const bundle = await pageBundle();
      reply.headers({
        etag: bundle.etag,
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      });
      if (request.headers['if-none-match'] === bundle.etag) return reply.status(304).send();
      return reply.type(type).send(pick(bundle));
    };
  app.get(
    '/assets/page.js',
    { config: HIDDEN },
    asset('text/javascript; charset=utf-8', (bundle) => bundle.script),
  );
  app.get(
    '/assets/page.css',
    { config: HIDDEN },
    asset('text/css; charset=utf-8', (bundle) => bundle.stylesheet),
  );

  app.get('/api/v1/ui-config', { schema: UI_CONFIG_SCHEMA }, async (request): Promise<UiConfig> => {
    const principal = options.authenticate(request.headers.authorization, request.socket.remoteAddress);
    return {
      traceLinkTemplate: options.traceLinkTemplate,
      principal: { name: principal.name, role: principal.role, tenant: principal.tenant ?? null },
    };
  });
}
