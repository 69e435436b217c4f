import { createHash, timingSafeEqual } from 'node:crypto';
import { KeyscopeError } from '@keyscope/errors';
import { API_AUTH_THROTTLED, API_FORBIDDEN, API_UNAUTHENTICATED } from './auth-errors.ts';
import { AuthFailures } from './auth-failures.ts';

/**
 * `read` reads findings, incidents, keys and scopes (or one tenant's part); `admin` may also
 * acknowledge and resolve; `metrics` reads /metrics and nothing else.
 */
export type Role = 'read' | 'admin' | 'metrics';
export const ROLES: readonly Role[] = ['read', 'admin', 'metrics'];

export interface ApiToken {
  /** The bearer token itself (keep config files private). */
  readonly token: string;
  readonly role: Role;
  /** When set, the token sees only this tenant's findings and its part of incidents (tenant-view.ts). */
  readonly tenant?: string;
  /** Shown as who acknowledged or resolved an incident. */
  readonly name?: string;
}

/** A 429 for a client address that spent its failure budget; `Retry-After` says when to come back. */
export class AuthThrottledError extends KeyscopeError {
  readonly retryAfterSeconds: number;

  constructor(waitMillis: number) {
    const seconds = Math.max(1, Math.ceil(waitMillis / 1000));
    super(API_AUTH_THROTTLED, `too many unknown tokens from this address; try again in ${seconds} s`);
    this.retryAfterSeconds = seconds;
  }
}

/** Who is asking: the token's role and tenant, or the open loopback mode. */
export interface Principal {
  role: Role;
  tenant: string | undefined;
  name: string;
}

/** What a token may read: its role (and tenant) as `read` or `admin`, refusing a `metrics` token. */
export type Reader = Principal & { role: 'read' | 'admin' };

/**
 * Bearer-token authentication. With no tokens configured the API is open — but only to requests
 * from loopback (the server also refuses to listen elsewhere without tokens), so a forgotten
 * config never exposes incidents to the network. With tokens, every refusal is counted in
 * `failures`, and a client address that presented too many unknown tokens is refused with 429
 * before its token is counted as a guess (auth-failures.ts); a token that authenticated from an
 * address is never slowed down there.
 */
export function createAuthenticator(
  tokens: readonly ApiToken[],
  failures: AuthFailures = new AuthFailures(),
) {
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
    if (match === null) {
      failures.failed(remoteAddress, 'missing');
      throw new KeyscopeError(API_UNAUTHENTICATED, 'expected an Authorization: Bearer <token> header');
    }
    const digest = createHash('sha256').update(match[1]!).digest();
    // Every digest is compared, so how long the search takes says nothing about which matched.
    let index: number | undefined;
    for (let i = 0; i < known.length; i++) if (timingSafeEqual(known[i]!.digest, digest)) index = i;
    const wait = failures.waitMillis(remoteAddress, index);
    if (wait > 0) {
      failures.failed(remoteAddress, 'throttled');
      throw new AuthThrottledError(wait);
    }
    if (index === undefined) {
      failures.failed(remoteAddress, 'invalid');
      throw new KeyscopeError(API_UNAUTHENTICATED, 'unknown bearer token');
    }
    failures.admitted(remoteAddress, index);
    return known[index]!.principal;
  };
}

/** Refuses a `metrics` token: it may scrape /metrics, and read nothing else. */
export function requireReader(principal: Principal): Reader {
  if (principal.role === 'metrics') {
    throw new KeyscopeError(API_FORBIDDEN, 'a token with role metrics may read /metrics only');
  }
  return principal as Reader;
}

/**
 * /metrics names every tier's services and operations and their coverage, every tenant's together:
 * a token with no tenant may read it (any role), a tenant's token may not.
 */
export function requireMetricsReader(principal: Principal): void {
  if (principal.tenant !== undefined) {
    throw new KeyscopeError(
      API_FORBIDDEN,
      `/metrics covers every tenant; a token of tenant ${principal.tenant} may not read it`,
    );
  }
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
