import { type Alerter, createAlerter } from '@keyscope/alerts';
import type { Detector } from '@keyscope/detector';
import type { KeyscopeStore } from '@keyscope/store';
import type { FastifyInstance } from 'fastify';
import { type ApiDependencies, createApiServer } from './api/api-server.ts';
import { createAuthenticator, requireReader } from './auth/auth.ts';
import { AuthFailures } from './auth/auth-failures.ts';
import type { ServeConfig } from './config.ts';
import { formatHostPort, type ListenAddress } from './listen-address.ts';
import type { Logger } from './logger.ts';
import { listenFailure } from './startup-errors.ts';
import { webRoutes } from './web/web-routes.ts';

export interface ApiWithAlertsOptions {
  config: ServeConfig;
  store: KeyscopeStore;
  /** Where the scope report comes from: the embedded detector, or the serve role's view. */
  detector: () => Pick<Detector, 'scopeReport' | 'scopeReportPage' | 'scopeOverflow'>;
  metrics: () => Promise<string>;
  /** Refused tokens, counted for /metrics, and client addresses' failure budgets. */
  authFailures: AuthFailures;
  ready: () => boolean;
  notReadyReason?: () => string | undefined;
  now: () => number;
  logger: Logger;
}

export interface ApiWithAlerts {
  address: ListenAddress;
  alerter: Alerter;
  /** Stops the alerter (waiting for a delivery in flight), then the API. */
  stop(): Promise<void>;
}

/**
 * The API with the web page on its port, as every process that serves incidents answers: the
 * page's /api/v1/ui-config refuses exactly what the API refuses (the same tokens and failure
 * budgets), and the API's error replies and cross-site guard cover the page too.
 */
export function createApiWithPage(
  options: ApiDependencies & {
    /** `api.traceLinkTemplate`: where the page links trace ids. */ traceLinkTemplate: string;
  },
): FastifyInstance {
  const { traceLinkTemplate, ...deps } = options;
  const authFailures = deps.authFailures ?? new AuthFailures();
  const api = createApiServer({ ...deps, authFailures });
  const authenticate = createAuthenticator(deps.tokens, authFailures);
  api.register(webRoutes, {
    authenticate: (authorization, remoteAddress) => requireReader(authenticate(authorization, remoteAddress)),
    traceLinkTemplate,
  });
  return api;
}

/**
 * The HTTP API and web page, then the alerter that links to them: what every process that serves
 * incidents starts (the embedded service and the Kafka serve role). The alerter is created once
 * the API's port is known, because its messages link to `<publicUrl>/incidents/<id>`.
 */
export async function startApiWithAlerts(options: ApiWithAlertsOptions): Promise<ApiWithAlerts> {
  const { config, store, logger, now } = options;
  let alerter: Alerter | undefined;
  const api = createApiWithPage({
    store,
    detector: options.detector,
    tokens: config.api.tokens,
    authFailures: options.authFailures,
    traceLinkTemplate: config.api.traceLinkTemplate,
    listenHost: config.api.host,
    publicUrl: config.api.publicUrl,
    maxStoresPerIncident: config.detector.maxStoresPerIncident,
    metrics: options.metrics,
    ready: options.ready,
    notReadyReason: options.notReadyReason,
    now,
    // A manual resolve is paged like the detector's own, inside its own transaction.
    incidentUpdated: (id) => {
      const incident = store.incidents.get(id);
      if (incident !== undefined && alerter !== undefined) {
        store.transaction(() => alerter!.incidentsChanged([incident]));
      }
    },
  });
  try {
    await api.listen({ host: config.api.host, port: config.api.port });
  } catch (error) {
    throw listenFailure('api', config.api, error);
  }
  const bound = api.server.address() as { port: number };
  const address = { host: config.api.host, port: bound.port };
  logger.info(`api listening on http://${formatHostPort(address)}`);
  if (config.api.tokens.length === 0) {
    logger.info('api: no tokens configured, answering loopback only (set api.tokens to expose it)');
  }
  try {
    alerter = createAlerter({
      outbox: store.outbox,
      incidents: store.incidents,
      config: config.alerts,
      publicUrl: config.api.publicUrl !== '' ? config.api.publicUrl : `http://${formatHostPort(address)}`,
      now,
      onError: (error) => logger.error(`alerts: ${(error as Error).message ?? String(error)}`),
    });
    alerter.start();
  } catch (error) {
    await api.close();
    throw error;
  }
  const started = alerter;
  return {
    address,
    alerter: started,
    async stop() {
      await started.stop();
      await api.close();
    },
  };
}
