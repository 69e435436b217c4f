import type { Detector } from '@keyscope/detector';
import { defaultDetectorConfig } from '@keyscope/detector';
import type { KeyscopeStore } from '@keyscope/store';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { type ApiToken, createAuthenticator, type Principal, requireReader } from '../auth/auth.ts';
import { AuthFailures } from '../auth/auth-failures.ts';
import { createCrossSiteGuard } from './cross-site.ts';
import { collectRouteDocs, docsRoutes } from './docs-routes.ts';
import {
  API_BODY_LIMIT_BYTES,
  clientErrorHandler,
  frameworkErrors,
  installErrorReplies,
  PATH_PARAMETER_MAX_CHARS,
} from './error-handler.ts';
import { findingRoutes } from './finding-routes.ts';
import { healthRoutes } from './health-routes.ts';
import { incidentRoutes } from './incident-routes.ts';
import { acceptJsonBodies } from './json-body.ts';
import { keyRoutes } from './key-routes.ts';
import { routingEventRoutes } from './routing-event-routes.ts';
import { scopeRoutes } from './scope-routes.ts';

export interface ApiDependencies {
  store: KeyscopeStore;
  /** For the scope report (kept in the detector's memory, or the serve role's view of it). */
  detector: () => Pick<Detector, 'scopeReportPage' | 'scopeOverflow'>;
  tokens: readonly ApiToken[];
  /** Where refused tokens are counted and client addresses' failure budgets kept; a fresh one unless set. */
  authFailures?: AuthFailures;
  /** Prometheus exposition text; with tokens, for tokens without a tenant only. */
  metrics: () => Promise<string>;
  /** False while the service is starting or draining, or cannot write its database: /readyz answers 503. */
  ready: () => boolean;
  /** Why `ready` is false, for /readyz's body. */
  notReadyReason?: () => string | undefined;
  now?: () => number;
  /** Called after an incident is acknowledged or resolved by hand (alerts follow it). */
  incidentUpdated?: (id: string) => void;
  /** `api.host`; without tokens, requests must be addressed to it or to a loopback name (cross-site.ts). */
  listenHost?: string;
  /** `api.publicUrl`; without tokens, its host and origin are allowed too. */
  publicUrl?: string;
  /** How long slow clients may hold a connection; `API_CONNECTION_TIMEOUTS` unless set. */
  timeouts?: Partial<ApiConnectionTimeouts>;
  /** `detector.maxStoresPerIncident`, for a tenant's part of an incident; the detector's default unless set. */
  maxStoresPerIncident?: number;
}

/**
 * The API's requests are small (a query, an empty or tiny JSON body), so a client that has not sent
 * its headers within 10 s, or its whole request within 30 s, is a slow or idle client holding a
 * connection and a file descriptor: it gets 408 and the connection closes. Keep-alive connections
 * idle past 65 s close (longer than the 60 s idle timeout of common load balancers in front).
 */
export interface ApiConnectionTimeouts {
  headersMillis: number;
  requestMillis: number;
  keepAliveMillis: number;
}

export const API_CONNECTION_TIMEOUTS: Readonly<ApiConnectionTimeouts> = Object.freeze({
  headersMillis: 10_000,
  requestMillis: 30_000,
  keepAliveMillis: 65_000,
});

/** fastify's options for `timeouts`, and for requests Node.js cannot parse: the API's and the Kafka roles' HTTP. */
export function connectionOptions(timeouts: Readonly<ApiConnectionTimeouts>) {
  return {
    requestTimeout: timeouts.requestMillis,
    keepAliveTimeout: timeouts.keepAliveMillis,
    http: {
      headersTimeout: timeouts.headersMillis,
      requestTimeout: timeouts.requestMillis,
      // Node checks both timeouts this often (30 s by default, which would let a 10 s one run to 40).
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMillis),
    },
    clientErrorHandler,
  };
}

/**
 * The HTTP API of docs/design.md's "Contracts": one plugin per resource — findings, incidents
 * (ack/resolve), keys, scopes, routing events — then health and metrics, and the OpenAPI document
 * built from every route's schemas (docs-routes.ts). Every input is validated by its JSON schema and
 * every answer declared by one (api-schemas.ts), which serializes it but for answers holding attempts; every refusal, fastify's own included, is
 * `{ error: { code, message } }` with the code's status (error-handler.ts). Without tokens it refuses
 * cross-site use (cross-site.ts); a tenant-scoped token sees and acts on its own tenant's part only
 * (tenant-view.ts). The web page is not the API's: serve registers it on this server
 * (api-with-alerts.ts) before it listens, and the document collects its /api/v1/ui-config too.
 */
export function createApiServer(deps: ApiDependencies): FastifyInstance {
  const timeouts = { ...API_CONNECTION_TIMEOUTS, ...deps.timeouts };
  const app = Fastify({
    logger: false,
    ...connectionOptions(timeouts),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true } },
    bodyLimit: API_BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: PATH_PARAMETER_MAX_CHARS },
    frameworkErrors,
  });
  const docs = collectRouteDocs(app);
  const authenticate = createAuthenticator(deps.tokens, deps.authFailures ?? new AuthFailures());
  const authenticateRequest = (request: FastifyRequest) =>
    authenticate(request.headers.authorization, request.socket.remoteAddress);
  const resources = {
    store: deps.store,
    authenticateReader: async (request: FastifyRequest) => {
      request.principal = requireReader(authenticateRequest(request));
    },
  };

  app.decorateRequest('principal', null as unknown as Principal);
  installErrorReplies(app);
  acceptJsonBodies(app);
  if (deps.tokens.length === 0) {
    const refuseCrossSite = createCrossSiteGuard({
      listenHost: deps.listenHost ?? '127.0.0.1',
      publicUrl: deps.publicUrl ?? '',
    });
    app.addHook('onRequest', async (request) => refuseCrossSite(request));
  }

  app.register(findingRoutes, resources);
  app.register(incidentRoutes, {
    ...resources,
    now: deps.now ?? Date.now,
    incidentUpdated: deps.incidentUpdated,
    maxStoresPerIncident: deps.maxStoresPerIncident ?? defaultDetectorConfig().maxStoresPerIncident,
  });
  app.register(keyRoutes, resources);
  app.register(scopeRoutes, { ...resources, detector: deps.detector });
  app.register(routingEventRoutes, resources);
  app.register(healthRoutes, {
    ready: deps.ready,
    notReadyReason: deps.notReadyReason,
    metrics: deps.metrics,
    authenticate: authenticateRequest,
  });
  app.register(docsRoutes, { docs, tokens: deps.tokens.length > 0 });
  return app;
}
