import { type Span, trace } from '@opentelemetry/api';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { invalidConfig, objectAt } from './config-check.ts';
import { GATE_IN_PROGRESS, GATE_KEY_MISSING, GATE_KEY_REUSED, IdempotencyRequestError } from './errors.ts';
import { requestFingerprint } from './fingerprint.ts';
import type { Execution, IdempotencyGate } from './gate.ts';
import { keyFromHeader } from './idempotency-key.ts';
import type { Effect } from './span-decision.ts';
import { decodeStoredResponse, encodeStoredResponse } from './stored-response.ts';

/** A route opts in with `config: { idempotency: 'required' }` (400 without a key) or `'optional'`. */
export type RouteIdempotency = 'required' | 'optional';

declare module 'fastify' {
  interface FastifyContextConfig {
    idempotency?: RouteIdempotency;
  }
}

export interface IdempotencyPluginOptions {
  readonly gate: IdempotencyGate;
  /** Default `idempotency-key`. */
  readonly header?: string;
  /** Default: method, route and parsed body (keys sorted), hashed; see `requestFingerprint`. */
  readonly fingerprint?: (request: FastifyRequest) => string;
  /** The request's tenant, recorded as `tenant.id` and namespacing its keys. */
  readonly tenantOf?: (request: FastifyRequest) => string | undefined;
  /**
   * Where decisions are recorded. Default: the request span of fastify's own instrumentation
   * (`@fastify/otel`) when it is registered, else the active span (an HTTP instrumentation's server
   * span).
   */
  readonly spanOf?: (request: FastifyRequest) => Span | undefined;
  /** Response headers stored and replayed besides the body. Default `content-type`, `location`. */
  readonly replayHeaders?: readonly string[];
  /** The problem+json `type` of the gate's 400/409/422 answers; omitted (about:blank) by default. */
  readonly problemType?: string;
  /**
   * Whether the side effect took place before the handler threw this error, recorded when its key
   * is released (`Execution.fail`). Default: `unknown`.
   */
  readonly effectOfError?: (error: unknown, request: FastifyRequest) => Effect;
}

interface Pending {
  readonly execution: Execution;
  /** Set when the handler threw: the effect to release the key with. */
  thrownEffect: Effect | undefined;
}

const KNOWN_OPTIONS = [
  'gate',
  'header',
  'fingerprint',
  'tenantOf',
  'spanOf',
  'replayHeaders',
  'problemType',
  'effectOfError',
  // fastify's own register options, which it hands to every plugin too
  'prefix',
  'logLevel',
  'logSerializers',
];

/**
 * The fastify adapter. Registered on an instance, it guards the routes registered after it whose
 * config names `idempotency`; other routes are untouched but for their request's span (`spanOf`,
 * else `@fastify/otel`'s request span, else the active one: the server span), which every route's
 * request gets `http.route` (the URL pattern, `/payments/:id`) and the name `POST /payments/:id`
 * on. The key is read in `preHandler`, after
 * the body is parsed and validated, so a request the schema refuses never takes a key.
 *
 * A response the handler sends, whatever its status, completes the key and is replayed to every
 * retry (the draft: a retry gets "the result of the previously completed operation, success or an
 * error"). A handler that throws releases the key instead, so the client's retry executes: an
 * exception says the operation did not finish, and replaying a 500 forever would turn a transient
 * failure into a permanent one. Handlers whose side effects survive a throw must make them
 * transactional (or idempotent downstream) for that retry to be safe.
 */
export const idempotencyPlugin: FastifyPluginAsync<IdempotencyPluginOptions> = async (app, options) => {
  objectAt(options, 'idempotencyPlugin', KNOWN_OPTIONS);
  const { gate } = options;
  const header = (options.header ?? 'idempotency-key').toLowerCase();
  const replayHeaders = (options.replayHeaders ?? ['content-type', 'location']).map((name) =>
    name.toLowerCase(),
  );
  const fingerprintOf =
    options.fingerprint ??
    ((request: FastifyRequest) =>
      requestFingerprint(request.method, request.routeOptions.url ?? request.url, request.body));
  const pending = new WeakMap<FastifyRequest, Pending>();
  const spanOf = (request: FastifyRequest) =>
    options.spanOf?.(request) ?? fastifyOtelSpanOf(request) ?? trace.getActiveSpan();

  app.addHook('onRoute', (route) => {
    const flag = route.config?.idempotency;
    if (flag !== undefined && flag !== 'required' && flag !== 'optional') {
      throw invalidConfig(
        `${route.method} ${route.url} config.idempotency`,
        "'required' or 'optional'",
        flag,
      );
    }
  });

  // The HTTP instrumentation's server span knows the method and URL, not fastify's route: without
  // `http.route` it is named `POST`, and keyscope could name the dedup tier by service alone.
  app.addHook('onRequest', async (request) => {
    const route = request.routeOptions.url;
    if (route === undefined) return;
    spanOf(request)?.setAttribute('http.route', route).updateName(`${request.method} ${route}`);
  });

  app.addHook('preHandler', async (request, reply) => {
    const flag = request.routeOptions.config.idempotency;
    if (flag === undefined) return;
    try {
      const key = keyFromHeader(request.headers[header]);
      if (key === undefined) {
        if (flag === 'optional') return;
        return problem(reply, options, GATE_KEY_MISSING.httpStatus, GATE_KEY_MISSING.code, {
          title: 'Idempotency-Key is missing',
          detail: `${request.method} ${request.routeOptions.url} requires an Idempotency-Key header.`,
        });
      }
      const tenant = options.tenantOf?.(request);
      const span = spanOf(request);
      const admission = await gate.admit({
        key,
        fingerprint: fingerprintOf(request),
        ...(tenant === undefined ? {} : { tenant }),
        ...(span === undefined ? {} : { span }),
      });
      switch (admission.outcome) {
        case 'miss':
          pending.set(request, { execution: admission.execution, thrownEffect: undefined });
          return;
        case 'hit': {
          const stored = decodeStoredResponse(admission.response);
          return reply
            .code(stored.statusCode)
            .headers(stored.headers)
            .header('idempotent-replayed', 'true')
            .send(stored.body);
        }
        case 'in_progress':
          return problem(reply, options, GATE_IN_PROGRESS.httpStatus, GATE_IN_PROGRESS.code, {
            title: 'A request is outstanding for this Idempotency-Key',
            detail:
              'A request with the same Idempotency-Key is still being processed; retry later for its result.',
          });
        case 'mismatch':
          return problem(reply, options, GATE_KEY_REUSED.httpStatus, GATE_KEY_REUSED.code, {
            title: 'Idempotency-Key is already used',
            detail:
              'This Idempotency-Key was used with a different request payload; use a new key for a new request.',
          });
      }
    } catch (error) {
      if (!(error instanceof IdempotencyRequestError)) throw error;
      return problem(reply, options, error.httpStatus, error.code, titled(error));
    }
  });

  app.addHook('onError', async (request, _reply, error) => {
    const entry = pending.get(request);
    if (entry !== undefined) entry.thrownEffect = options.effectOfError?.(error, request) ?? 'unknown';
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const entry = pending.get(request);
    if (entry === undefined) return payload;
    pending.delete(request);
    if (entry.thrownEffect !== undefined) {
      await entry.execution.fail(entry.thrownEffect);
      return payload;
    }
    if (!(typeof payload === 'string' || Buffer.isBuffer(payload) || payload == null)) {
      // A streamed body cannot be stored for replay; releasing lets a retry run rather than
      // replaying nothing. Mutation endpoints answer with small bodies, not streams. The handler
      // finished: its effect took place, and a retry will do it again.
      await entry.execution.fail('committed');
      return payload;
    }
    const stored = await entry.execution.complete(
      encodeStoredResponse({
        statusCode: reply.statusCode,
        headers: pickHeaders(reply, replayHeaders),
        body: payload ?? '',
      }),
    );
    if (!stored) request.log.warn({ url: request.url }, 'idempotency: response not stored for replay');
    return payload;
  });

  // Only when onSend never ran (a hijacked reply): never leave a key locked until its lock TTL.
  app.addHook('onResponse', async (request) => {
    const entry = pending.get(request);
    if (entry === undefined) return;
    pending.delete(request);
    await entry.execution.fail();
  });
};

// Hooks must reach the routes of the instance that registers the plugin (fastify-plugin's effect).
Object.assign(idempotencyPlugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: '@keyscope/gate',
});

/**
 * The request span of fastify's own instrumentation (`@fastify/otel`, which decorates each request
 * with `opentelemetry()`), while it is open. Under it the active span inside this plugin's hooks is
 * the hook's own span (`preHandler - …`), which carries no route: a decision recorded there would
 * name its dedup tier after the hook.
 */
function fastifyOtelSpanOf(request: FastifyRequest): Span | undefined {
  const decorated = (request as { opentelemetry?: () => { span: Span | null } }).opentelemetry;
  return typeof decorated === 'function' ? (decorated.call(request).span ?? undefined) : undefined;
}

function pickHeaders(reply: FastifyReply, names: readonly string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of names) {
    const value = reply.getHeader(name);
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return headers;
}

function titled(error: IdempotencyRequestError): { title: string; detail: string } {
  const titles: Record<number, string> = {
    400: 'Idempotency-Key is invalid',
    503: 'Idempotency cannot be checked right now',
  };
  return { title: titles[error.httpStatus] ?? 'Idempotency check failed', detail: error.message };
}

function problem(
  reply: FastifyReply,
  options: IdempotencyPluginOptions,
  status: number,
  code: string,
  text: { title: string; detail: string },
): FastifyReply {
  const body = {
    ...(options.problemType === undefined ? {} : { type: options.problemType }),
    title: text.title,
    status,
    detail: text.detail,
    code,
  };
  return reply.code(status).type('application/problem+json').send(JSON.stringify(body));
}
