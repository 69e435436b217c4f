import { KeyscopeError } from '@keyscope/errors';
import type { FastifyRequest } from 'fastify';
import { API_CROSS_SITE, API_FOREIGN_HOST } from './api-errors.ts';
import { excerpt } from './error-handler.ts';

/** The request header the web page sends with every call; any value marks a deliberate request. */
export const CLIENT_HEADER = 'x-keyscope-client';

export interface CrossSiteOptions {
  /** `api.host`: a Host header may name it. */
  listenHost: string;
  /** `api.publicUrl` ('' for none): its host may be the Host header, its origin the Origin header. */
  publicUrl: string;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Without tokens the API trusts whoever reaches it over loopback — and a browser on this machine
 * reaches it on behalf of any page it shows. Such a page can send simple requests (a form's POST,
 * `fetch` with `content-type: text/plain`) without reading the answer, and can read answers once
 * it rebinds its own DNS name to 127.0.0.1. So, in this mode only, a request is refused when
 *
 * - its Host names neither a loopback name (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`) nor
 *   `api.host` nor `api.publicUrl`'s host — a rebound page's requests carry its own name;
 * - its Origin (browsers send one with every cross-origin request and every POST) is another
 *   origin than the one the request is addressed to, or than `api.publicUrl`'s;
 * - it changes something (any method but GET, HEAD, OPTIONS) without `content-type:
 *   application/json` or an `x-keyscope-client` header: neither is something a page can make a
 *   browser send to another origin without a CORS preflight, which this API never grants.
 *
 * With tokens none of this applies: a request must carry a bearer token in `Authorization`, which
 * a foreign page can neither read nor make the browser attach, and a Host allowlist would refuse
 * the names that proxies and load balancers forward.
 */
export function createCrossSiteGuard(options: CrossSiteOptions): (request: FastifyRequest) => void {
  const names = new Set<string>();
  const listen = hostnameOf(
    options.listenHost.includes(':') ? `[${options.listenHost}]` : options.listenHost,
  );
  if (listen !== undefined) names.add(listen);
  let publicOrigin: string | undefined;
  // The config owns publicUrl's validation; one that is no URL names no host here.
  if (URL.canParse(options.publicUrl)) {
    const url = new URL(options.publicUrl);
    names.add(stripDot(url.hostname));
    publicOrigin = url.origin;
  }
  const allowedName = (name: string) => isLoopbackName(name) || names.has(name);

  return function refuseCrossSite(request: FastifyRequest): void {
    const host = request.headers.host;
    // Browsers always send Host; a request without one (HTTP/1.0) is no page's.
    const target = host === undefined ? undefined : authorityOf(host);
    if (host !== undefined && (target === undefined || !allowedName(target.hostname))) {
      throw new KeyscopeError(
        API_FOREIGN_HOST,
        `Host ${excerpt(host)} is not this machine's: without api.tokens the API answers requests addressed to loopback, api.host or api.publicUrl`,
      );
    }
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== publicOrigin && !sameOrigin(origin, target)) {
      throw new KeyscopeError(
        API_CROSS_SITE,
        `a page from origin ${excerpt(origin)} may not use this API: without api.tokens it answers its own pages only`,
      );
    }
    if (!SAFE_METHODS.has(request.method) && !isDeliberate(request)) {
      throw new KeyscopeError(
        API_CROSS_SITE,
        `${request.method} needs content-type: application/json or an ${CLIENT_HEADER} header (without api.tokens, so that no other site's page can send it)`,
      );
    }
  };
}

function isDeliberate(request: FastifyRequest): boolean {
  const client = request.headers[CLIENT_HEADER];
  if (typeof client === 'string' && client !== '') return true;
  const type = request.headers['content-type'];
  return type !== undefined && type.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

function isLoopbackName(name: string): boolean {
  return (
    name === 'localhost' ||
    name.endsWith('.localhost') ||
    name === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)
  );
}

interface Authority {
  hostname: string;
  /** '' when the header names no port. */
  port: string;
}

/** A Host header's name and port, normalized as a browser would (case, IPv4 shorthand). */
function authorityOf(host: string): Authority | undefined {
  if (host === '' || /[/?#@\\\s]/.test(host)) return undefined;
  try {
    const url = new URL(`http://${host}`);
    // URL drops port 80 for http; keep what the header said, for comparing with an Origin's.
    const port = /:(\d+)$/.exec(host)?.[1] ?? '';
    return { hostname: stripDot(url.hostname), port: port === '' ? '' : String(Number(port)) };
  } catch {
    return undefined;
  }
}

function hostnameOf(host: string): string | undefined {
  return authorityOf(host)?.hostname;
}

function stripDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** The Origin is the origin the request is addressed to: same name, same port. */
function sameOrigin(origin: string, target: Authority | undefined): boolean {
  if (target === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (sandboxed frames, file: pages) and anything else unparseable
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  if (stripDot(url.hostname) !== target.hostname) return false;
  // No port in Host: the client used its scheme's default port, so a same-origin page names none.
  if (target.port === '') return url.port === '';
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  return port === target.port;
}
