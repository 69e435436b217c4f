import { createRequire } from 'node:module';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { context, type Span, SpanKind, trace } from '@opentelemetry/api';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import Fastify, { type FastifyRequest } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DedupStore } from '../src/dedup-store.ts';
import { type IdempotencyPluginOptions, idempotencyPlugin } from '../src/fastify-plugin.ts';
import { createIdempotencyGate } from '../src/gate.ts';
import { nodeScope } from './scopes.ts';
import { STORES, unavailableStore } from './stores.ts';
import { createTestTracing } from './tracing.ts';

const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A payments service: POST /payments requires a key, POST /refunds takes one if sent, GET /health none. */
async function paymentsApp(store: DedupStore, pluginOptions: Partial<IdempotencyPluginOptions> = {}) {
  const clock = { now: 1_700_000_000_000 };
  const gate = createIdempotencyGate({
    store,
    scope: nodeScope(),
    ttlMillis: 60_000,
    clock: () => clock.now,
  });
  const tracing = createTestTracing();
  const app = Fastify();
  apps.push(app);
  const spans = new WeakMap<FastifyRequest, Span>();
  app.addHook('onRequest', async (request) => {
    spans.set(request, tracing.serverSpan(`${request.method} ${request.routeOptions.url}`));
  });
  app.addHook('onResponse', async (request) => {
    spans.get(request)?.end();
  });
  await app.register(idempotencyPlugin, {
    gate,
    spanOf: (request) => spans.get(request),
    tenantOf: (request) => request.headers['x-tenant'] as string | undefined,
    ...pluginOptions,
  });

  const entered = deferred();
  const state = { executions: 0, hold: null as Promise<void> | null, fail: false, entered: entered.promise };
  app.post<{ Body: { amount: number } }>(
    '/payments',
    { config: { idempotency: 'required' } },
    async (request, reply) => {
      state.executions++;
      entered.resolve();
      if (state.hold) await state.hold;
      if (state.fail) throw new Error('card network timeout');
      if (request.body.amount <= 0) return reply.code(400).send({ error: 'amount must be positive' });
      const id = `pay_${state.executions}`;
      return reply
        .code(201)
        .header('location', `/payments/${id}`)
        .header('x-trace', 'not replayed')
        .send({ id });
    },
  );
  app.post('/refunds', { config: { idempotency: 'optional' } }, async () => {
    state.executions++;
    return { refunded: true };
  });
  app.get('/health', async () => ({ ok: true }));
  await app.ready();

  const pay = (key: string | undefined, amount = 100, headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: '/payments',
      payload: { amount },
      headers: { ...(key === undefined ? {} : { 'idempotency-key': key }), ...headers },
    });
  return {
    app,
    clock,
    tracing,
    state,
    pay,
    outcomes: () => tracing.decisions().map((d) => d['idempotency.outcome']),
  };
}

/** `[idempotency.effect, idempotency.released]` of each finished span. */
function decisionsOf(tracing: { decisions(): Record<string, unknown>[] }): unknown[][] {
  return tracing.decisions().map((d) => [d['idempotency.effect'], d['idempotency.released']]);
}

describe.each(STORES)('idempotencyPlugin on the %s', (_name, makeStore) => {
  it('executes the first request and stores its response', async () => {
    const { pay, state, tracing } = await paymentsApp(makeStore());
    const response = await pay('k1');
    expect(response.statusCode).toBe(201);
    expect(response.json()).toEqual({ id: 'pay_1' });
    expect(response.headers['idempotent-replayed']).toBeUndefined();
    expect(state.executions).toBe(1);
    expect(tracing.decisions()).toEqual([
      {
        'idempotency.key': 'k1',
        'idempotency.store': 'payments/node:payments-a-1',
        'idempotency.scope': 'node',
        'idempotency.outcome': 'miss',
        'idempotency.effect': 'committed',
        'idempotency.released': false,
      },
    ]);
  });

  it('replays status, content-type, location and body to a retry, marked Idempotent-Replayed: true', async () => {
    const { pay, state, outcomes } = await paymentsApp(makeStore());
    const first = await pay('k1');
    const retry = await pay('k1');
    expect(retry.statusCode).toBe(201);
    expect(retry.body).toBe(first.body);
    expect(retry.headers['content-type']).toBe(first.headers['content-type']);
    expect(retry.headers.location).toBe('/payments/pay_1');
    expect(retry.headers['x-trace']).toBeUndefined();
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(state.executions).toBe(1);
    expect(outcomes()).toEqual(['miss', 'hit']);
  });

  it('executes exactly one of two concurrent requests with one key and answers the other 409', async () => {
    const { pay, state, outcomes } = await paymentsApp(makeStore());
    const release = deferred();
    state.hold = release.promise;
    const both = [pay('k1'), pay('k1')];
    // The admitted one is held in the handler, so the first to answer is the refused one.
    const refused = await Promise.race(both);
    expect(refused.statusCode).toBe(409);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.json()).toMatchObject({ status: 409, code: 'KS_GATE_IN_PROGRESS' });
    release.resolve();
    const statuses = (await Promise.all(both)).map((response) => response.statusCode);
    expect(statuses.sort()).toEqual([201, 409]);
    expect(state.executions).toBe(1);
    expect(outcomes()).toEqual(['in_progress', 'miss']);
  });

  it('answers 409 to a retry that arrives while the first request executes', async () => {
    const { pay, state } = await paymentsApp(makeStore());
    const release = deferred();
    state.hold = release.promise;
    const first = pay('k1');
    await state.entered;
    expect((await pay('k1')).statusCode).toBe(409);
    release.resolve();
    expect((await first).statusCode).toBe(201);
    expect((await pay('k1')).headers['idempotent-replayed']).toBe('true');
    expect(state.executions).toBe(1);
  });

  it('answers 422 to the same key with a different payload', async () => {
    const { pay, state, outcomes } = await paymentsApp(makeStore());
    await pay('k1', 100);
    const reused = await pay('k1', 200);
    expect(reused.statusCode).toBe(422);
    expect(reused.json()).toMatchObject({ status: 422, code: 'KS_GATE_KEY_REUSED' });
    expect(state.executions).toBe(1);
    expect(outcomes()).toEqual(['miss', 'mismatch']);
  });

  it('answers 400 to a request without a key on a route that requires one', async () => {
    const { pay, state, tracing } = await paymentsApp(makeStore());
    const response = await pay(undefined);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({ status: 400, code: 'KS_GATE_KEY_MISSING' });
    expect(state.executions).toBe(0);
    expect(tracing.decisions()).toEqual([{}]);
  });

  it('executes a keyless request on an optional route without consulting the store', async () => {
    const { app, state, tracing } = await paymentsApp(makeStore());
    const refund = () => app.inject({ method: 'POST', url: '/refunds', payload: {} });
    expect((await refund()).statusCode).toBe(200);
    expect((await refund()).statusCode).toBe(200);
    expect(state.executions).toBe(2);
    expect(tracing.decisions()).toEqual([{}, {}]);
    const keyed = () =>
      app.inject({ method: 'POST', url: '/refunds', payload: {}, headers: { 'idempotency-key': 'r1' } });
    await keyed();
    expect((await keyed()).headers['idempotent-replayed']).toBe('true');
    expect(state.executions).toBe(3);
  });

  it('leaves routes without the flag alone', async () => {
    const { app, tracing } = await paymentsApp(makeStore());
    const response = await app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'idempotency-key': 'k1' },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['idempotent-replayed']).toBeUndefined();
    expect(tracing.decisions()).toEqual([{}]);
  });

  it('executes again once the key has outlived ttlMillis', async () => {
    const { pay, clock, state } = await paymentsApp(makeStore());
    await pay('k1');
    clock.now += 60_000;
    const again = await pay('k1');
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(again.json()).toEqual({ id: 'pay_2' });
    expect(state.executions).toBe(2);
  });

  it('releases the key when the handler throws, so the retry executes', async () => {
    const { pay, state, outcomes, tracing } = await paymentsApp(makeStore());
    state.fail = true;
    expect((await pay('k1')).statusCode).toBe(500);
    state.fail = false;
    const retry = await pay('k1');
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(state.executions).toBe(2);
    // The failed request was admitted and then released; how far it got is unknown.
    expect(outcomes()).toEqual(['miss', 'miss']);
    expect(decisionsOf(tracing)).toEqual([
      ['unknown', true],
      ['committed', false],
    ]);
  });

  it('records the effect effectOfError names for the error the handler threw', async () => {
    const { pay, state, tracing } = await paymentsApp(makeStore(), {
      effectOfError: (error) => ((error as Error).message === 'card network timeout' ? 'none' : 'unknown'),
    });
    state.fail = true;
    expect((await pay('k1')).statusCode).toBe(500);
    expect(decisionsOf(tracing)).toEqual([['none', true]]);
  });

  it('stores and replays an error response the handler sent', async () => {
    const { pay, state } = await paymentsApp(makeStore());
    expect((await pay('k1', -5)).statusCode).toBe(400);
    const retry = await pay('k1', -5);
    expect(retry.statusCode).toBe(400);
    expect(retry.json()).toEqual({ error: 'amount must be positive' });
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(state.executions).toBe(1);
  });

  it('answers 422 to one key reused on another route', async () => {
    const { app, pay } = await paymentsApp(makeStore());
    await pay('k1');
    const refund = await app.inject({
      method: 'POST',
      url: '/refunds',
      payload: { amount: 100 },
      headers: { 'idempotency-key': 'k1' },
    });
    expect(refund.statusCode).toBe(422);
  });

  it('treats a structured-field quoted key as the bare key', async () => {
    const { pay, state } = await paymentsApp(makeStore());
    await pay('8e03978e-40d5');
    expect((await pay('"8e03978e-40d5"')).headers['idempotent-replayed']).toBe('true');
    expect(state.executions).toBe(1);
  });

  it('answers 400 KS_GATE_KEY_INVALID to a malformed key', async () => {
    const { pay, state } = await paymentsApp(makeStore());
    const response = await pay('"unterminated');
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'KS_GATE_KEY_INVALID' });
    expect(state.executions).toBe(0);
  });

  it('records the tenant and keeps two tenants’ identical keys apart', async () => {
    const { pay, state, tracing } = await paymentsApp(makeStore());
    await pay('k1', 100, { 'x-tenant': 'acme' });
    const other = await pay('k1', 100, { 'x-tenant': 'globex' });
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    expect(state.executions).toBe(2);
    expect(tracing.decisions().map((d) => d['tenant.id'])).toEqual(['acme', 'globex']);
  });
});

describe('idempotencyPlugin', () => {
  it('answers 503 and executes nothing when the store does not answer', async () => {
    const { pay, state, outcomes } = await paymentsApp(unavailableStore());
    const response = await pay('k1');
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ code: 'KS_GATE_STORE_UNAVAILABLE' });
    expect(state.executions).toBe(0);
    expect(outcomes()).toEqual(['error']);
  });

  it('puts the configured problem type in its answers', async () => {
    const [, makeStore] = STORES[0]!;
    const { pay } = await paymentsApp(makeStore(), { problemType: 'https://docs.example.com/idempotency' });
    expect((await pay(undefined)).json()).toMatchObject({ type: 'https://docs.example.com/idempotency' });
  });

  it('refuses a route whose idempotency flag is neither required nor optional', async () => {
    const [, makeStore] = STORES[0]!;
    const app = Fastify();
    apps.push(app);
    const gate = createIdempotencyGate({ store: makeStore(), scope: nodeScope() });
    await app.register(idempotencyPlugin, { gate });
    expect(() =>
      app.post('/payments', { config: { idempotency: 'yes' as 'required' } }, async () => ({})),
    ).toThrow(expect.objectContaining({ code: 'KS_GATE_CONFIG_INVALID' }));
  });
});

describe('idempotencyPlugin under the OpenTelemetry HTTP instrumentation', () => {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'payments' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const instrumentation = new HttpInstrumentation();
  const fastifyInstrumentation = new FastifyOtelInstrumentation();
  beforeAll(() => {
    provider.register();
    instrumentation.setTracerProvider(provider);
    instrumentation.enable();
    fastifyInstrumentation.setTracerProvider(provider);
    // The instrumentation patches node:http as it is required: require it once it listens.
    createRequire(import.meta.url)('node:http');
  });
  afterAll(async () => {
    instrumentation.disable();
    await provider.shutdown();
    trace.disable();
    context.disable();
  });

  it("names the server span by fastify's route pattern and sets http.route on it", async () => {
    const app = Fastify();
    apps.push(app);
    await captureOnce(app, 'k1');

    const servers = exporter.getFinishedSpans().filter((span) => span.kind === SpanKind.SERVER);
    expect(servers).toHaveLength(1);
    expect(servers[0]!.attributes['http.route']).toBe('/payments/:id/capture');
    expect(servers[0]!.name).toBe('POST /payments/:id/capture');
    // The gate's decision is on the same span: keyscope reads key and route together.
    expect(servers[0]!.attributes['idempotency.key']).toBe('k1');
  });

  it("records on fastify's own request span, which carries the route, under @fastify/otel's hook spans", async () => {
    exporter.reset();
    const app = Fastify();
    apps.push(app);
    // Before the gate, as its registerOnInitialization does: it wraps every hook added after it
    // in a span of its own, the active span inside the gate's hooks.
    await app.register(fastifyInstrumentation.plugin());
    await captureOnce(app, 'k2');

    const spans = exporter.getFinishedSpans();
    const server = spans.find((span) => span.kind === SpanKind.SERVER)!;
    expect(server.attributes['http.route']).toBe('/payments/:id/capture');
    const decided = spans.filter((span) => span.attributes['idempotency.outcome'] !== undefined);
    expect(decided).toHaveLength(1);
    // fastify's request span, the SERVER span's child: keyscope reads the route beside the decision.
    expect(decided[0]!.attributes).toMatchObject({
      'idempotency.key': 'k2',
      'idempotency.outcome': 'miss',
      'http.route': '/payments/:id/capture',
    });
    expect(decided[0]!.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    // The hook spans (`preHandler - …`) are there, and hold none of it.
    const hooks = spans.filter((span) => / - /.test(span.name));
    expect(hooks.length).toBeGreaterThan(0);
    for (const hook of hooks) expect(hook.attributes['idempotency.outcome']).toBeUndefined();
  });
});

/**
 * Registers the gate (node store) and a required-key route `/payments/:id/capture` on `app`, sends
 * one POST with `key`, expects 200 and closes the app: its spans are then in the exporter.
 */
async function captureOnce(app: ReturnType<typeof Fastify>, key: string): Promise<void> {
  const [, makeStore] = STORES[0]!;
  await app.register(idempotencyPlugin, {
    gate: createIdempotencyGate({ store: makeStore(), scope: nodeScope() }),
  });
  app.post('/payments/:id/capture', { config: { idempotency: 'required' } }, async () => ({ ok: true }));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const response = await fetch(`${url}/payments/pay_42/capture`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: '{}',
  });
  expect(response.status).toBe(200);
  await app.close();
}
