import type { KeyscopeStore } from '@keyscope/store';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/auth.ts';
import { ERROR_SCHEMA } from './api-schemas.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is asking; set by `authenticateReader` before a guarded route's handler runs. */
    principal: Principal;
  }
}

/** What every resource's routes (findings, incidents, keys, scopes, routing events) are given. */
export interface ResourceRouteOptions {
  store: KeyscopeStore;
  /**
   * A preHandler that sets `request.principal` to the token's reader (any role but `metrics`), or
   * refuses the request (auth.ts); each resource plugin runs it before every route of its own.
   */
  authenticateReader: (request: FastifyRequest) => Promise<void>;
}

/** The request's principal's tenant; undefined for a token without one (it sees every tenant). */
export function tenantOf(request: FastifyRequest): string | undefined {
  return request.principal.tenant;
}

/** Every refusal of a route, whichever its status (`{ error: { code, message } }`, error-handler.ts). */
export const REFUSAL_RESPONSES = { '4xx': ERROR_SCHEMA } as const;
