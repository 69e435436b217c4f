import { createHash, timingSafeEqual } from 'node:crypto';
import { KeyscopeError } from '@keyscope/errors';
import { API_FORBIDDEN, API_UNAUTHENTICATED } from './api-errors.ts';

export type Role = 'read' | 'admin';

export interface ApiToken {
  /** The bearer token itself (keep config files private). */
  readonly token: string;
  readonly role: Role;
  /** When set, the token sees only this tenant's findings and its part of incidents (tenant-view.ts). */
  readonly tenant?: string;
  /** Shown as who acknowledged or resolved an incident. */
  readonly name?: string;
}

/** Who is asking: the token's role and tenant, or the open loopback mode. */
export interface Principal {
  role: Role;
  tenant: string | undefined;
  name: string;
}

/**
 * Bearer-token authentication. With no tokens configured the API is open — but only to requests
 * from loopback (the server also refuses to listen elsewhere without tokens), so a forgotten
 * config never exposes incidents to the network.
 */
export function createAuthenticator(tokens: readonly ApiToken[]) {
  // Compare digests: equal length, so timingSafeEqual applies and token length does not leak.
  const known = tokens.map((entry, index) => ({
    digest: createHash('sha256').update(entry.token).digest(),
    principal: {
      role: entry.role,
      tenant: entry.tenant,
      name: entry.name ?? `token-${index + 1}`,
    } as Principal,
  }));

  return function authenticate(
    authorization: string | undefined,
    remoteAddress: string | undefined,
  ): Principal {
    if (known.length === 0) {
      if (!isLoopback(remoteAddress)) {
        throw new KeyscopeError(API_FORBIDDEN, 'the API has no tokens configured and answers loopback only');
      }
      return { role: 'admin', tenant: undefined, name: 'loopback' };
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (match === null)
      throw new KeyscopeError(API_UNAUTHENTICATED, 'expected an Authorization: Bearer <token> header');
    const digest = createHash('sha256').update(match[1]!).digest();
    for (const entry of known) if (timingSafeEqual(entry.digest, digest)) return entry.principal;
    throw new KeyscopeError(API_UNAUTHENTICATED, 'unknown bearer token');
  };
}

export function requireAdmin(principal: Principal): void {
  if (principal.role !== 'admin') {
    throw new KeyscopeError(API_FORBIDDEN, `this needs an admin token, the token has role ${principal.role}`);
  }
}

export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}
