import { context, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import type { DedupStore } from '../src/dedup-store.ts';
import { createIdempotencyGate, type IdempotencyGateOptions } from '../src/gate.ts';
import { IdempotencyScopeError } from '../src/idempotency-scope-error.ts';
import { NODE_A, nodeScope } from './scopes.ts';
import { STORES, unavailableStore } from './stores.ts';
import { AsyncLocalContextManager, createTestTracing } from './tracing.ts';

const STORE_ID = 'payments/node:payments-a-1';

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function setup(store: DedupStore, options: Partial<IdempotencyGateOptions> = {}) {
  const clock = { now: 1_700_000_000_000 };
  const gate = createIdempotencyGate({
    store,
    scope: nodeScope(),
    ttlMillis: 60_000,
    lockTtlMillis: 5_000,
    clock: () => clock.now,
    ...options,
  });
  const tracing = createTestTracing();
  let executions = 0;
  /** Runs one request in its own server span, as a service would. */
  async function request<T>(
    key: string | undefined,
    fingerprint: string,
    work: () => T | Promise<T>,
    tenant?: string,
  ) {
    const span = tracing.serverSpan();
    try {
      return await gate.run(
        key,
        fingerprint,
        async () => {
          executions++;
          return work();
        },
        { span, ...(tenant === undefined ? {} : { tenant }) },
      );
    } finally {
      span.end();
    }
  }
  return { gate, clock, tracing, request, executions: () => executions };
}

/** `[outcome, effect, released]` of one recorded decision. */
function decisionOf(decision: Record<string, unknown>): unknown[] {
  return [decision['idempotency.outcome'], decision['idempotency.effect'], decision['idempotency.released']];
}

describe.each(STORES)('gate.run on the %s', (_name, makeStore) => {
  it('executes the first request and records a miss', async () => {
    const { request, tracing, executions } = setup(makeStore());
    await expect(request('k1', 'fp', () => ({ id: 'pay_1' }))).resolves.toEqual({
      value: { id: 'pay_1' },
      replayed: false,
    });
    expect(executions()).toBe(1);
    expect(tracing.decisions()).toEqual([
      {
        'idempotency.key': 'k1',
        'idempotency.store': STORE_ID,
        'idempotency.scope': 'node',
        'idempotency.outcome': 'miss',
        'idempotency.effect': 'committed',
        'idempotency.released': false,
      },
    ]);
  });

  it('replays the stored value to a retry after completion and records a hit', async () => {
    const { request, tracing, executions } = setup(makeStore());
    await request('k1', 'fp', () => ({ id: 'pay_1' }));
    await expect(request('k1', 'fp', () => ({ id: 'pay_2' }))).resolves.toEqual({
      value: { id: 'pay_1' },
      replayed: true,
    });
    expect(executions()).toBe(1);
    expect(tracing.decisions().map((d) => d['idempotency.outcome'])).toEqual(['miss', 'hit']);
  });

  it('executes exactly one of two concurrent requests and answers the other KS_GATE_IN_PROGRESS (409)', async () => {
    const { request, tracing, executions } = setup(makeStore());
    const release = deferred();
    const first = request('k1', 'fp', async () => {
      await release.promise;
      return 'done';
    });
    const second = request('k1', 'fp', () => 'again');
    await expect(second).rejects.toMatchObject({
      code: 'KS_GATE_IN_PROGRESS',
      httpStatus: 409,
      retryable: true,
    });
    release.resolve();
    await expect(first).resolves.toEqual({ value: 'done', replayed: false });
    expect(executions()).toBe(1);
    expect(tracing.decisions().map((d) => d['idempotency.outcome'])).toEqual(['in_progress', 'miss']);
  });

  it('refuses the key with another payload fingerprint with KS_GATE_KEY_REUSED (422), completed or not', async () => {
    const { request, tracing, executions } = setup(makeStore());
    await request('k1', 'fp-a', () => 1);
    await expect(request('k1', 'fp-b', () => 2)).rejects.toMatchObject({
      code: 'KS_GATE_KEY_REUSED',
      httpStatus: 422,
    });
    const release = deferred();
    const running = request('k2', 'fp-a', () => release.promise);
    await expect(request('k2', 'fp-b', () => 2)).rejects.toMatchObject({ code: 'KS_GATE_KEY_REUSED' });
    release.resolve();
    await running;
    expect(executions()).toBe(2);
    expect(tracing.decisions().map((d) => d['idempotency.outcome'])).toEqual([
      'miss',
      'mismatch',
      'mismatch',
      'miss',
    ]);
  });

  it('refuses a missing key with KS_GATE_KEY_MISSING (400) and records nothing', async () => {
    const { request, tracing, executions } = setup(makeStore());
    await expect(request(undefined, 'fp', () => 1)).rejects.toMatchObject({
      code: 'KS_GATE_KEY_MISSING',
      httpStatus: 400,
    });
    await expect(request('', 'fp', () => 1)).rejects.toMatchObject({ code: 'KS_GATE_KEY_MISSING' });
    expect(executions()).toBe(0);
    expect(tracing.decisions()).toEqual([{}, {}]);
  });

  it('runs the work without the gate when the key is optional and absent', async () => {
    const { gate } = setup(makeStore());
    await expect(gate.run(undefined, 'fp', () => 7, { required: false })).resolves.toEqual({
      value: 7,
      replayed: false,
    });
  });

  it('executes again once the key has outlived ttlMillis', async () => {
    const { request, clock, executions } = setup(makeStore());
    await request('k1', 'fp', () => 1);
    clock.now += 59_999;
    await expect(request('k1', 'fp', () => 2)).resolves.toEqual({ value: 1, replayed: true });
    clock.now += 1;
    await expect(request('k1', 'fp', () => 3)).resolves.toEqual({ value: 3, replayed: false });
    expect(executions()).toBe(2);
  });

  it('releases the key when the work throws, records the release with an unknown effect, and lets the retry execute', async () => {
    const { request, tracing, executions } = setup(makeStore());
    await expect(
      request('k1', 'fp', () => {
        throw new Error('card network timeout');
      }),
    ).rejects.toThrow('card network timeout');
    await expect(request('k1', 'fp', () => 'charged')).resolves.toEqual({
      value: 'charged',
      replayed: false,
    });
    expect(executions()).toBe(2);
    expect(tracing.decisions().map(decisionOf)).toEqual([
      ['miss', 'unknown', true],
      ['miss', 'committed', false],
    ]);
  });

  it('records the effect effectOfError names when the work throws before its side effect', async () => {
    const { gate, tracing } = setup(makeStore());
    const span = tracing.serverSpan();
    await expect(
      gate.run(
        'k1',
        'fp',
        () => {
          throw new RangeError('processor unavailable');
        },
        { span, effectOfError: (error) => (error instanceof RangeError ? 'none' : 'unknown') },
      ),
    ).rejects.toThrow('processor unavailable');
    span.end();
    expect(tracing.decisions().map(decisionOf)).toEqual([['miss', 'none', true]]);
  });

  it('records the effect given to fail(), and refuses one outside committed, none and unknown', async () => {
    const { gate, tracing } = setup(makeStore());
    const span = tracing.serverSpan();
    const admission = await gate.admit({ key: 'k1', fingerprint: 'fp', span });
    if (admission.outcome !== 'miss') throw new Error('expected a miss');
    await expect(admission.execution.fail('charged' as never)).rejects.toMatchObject({
      code: 'KS_GATE_CONFIG_INVALID',
    });
    await admission.execution.fail('committed');
    span.end();
    expect(tracing.decisions().map(decisionOf)).toEqual([['miss', 'committed', true]]);
  });

  it('records no effect on a replay, a conflict or a mismatch', async () => {
    const { request, gate, tracing } = setup(makeStore());
    await request('k1', 'fp', () => 1);
    await request('k1', 'fp', () => 2);
    await gate.admit({ key: 'k2', fingerprint: 'fp' });
    await expect(request('k2', 'fp', () => 3)).rejects.toMatchObject({ code: 'KS_GATE_IN_PROGRESS' });
    await expect(request('k1', 'other', () => 4)).rejects.toMatchObject({ code: 'KS_GATE_KEY_REUSED' });
    expect(tracing.decisions().map(decisionOf)).toEqual([
      ['miss', 'committed', false],
      ['hit', 'none', false],
      ['in_progress', 'none', false],
      ['mismatch', 'none', false],
    ]);
  });

  it('lets a retry take over a lock whose owner outlived lockTtlMillis, and keeps the new owner’s response', async () => {
    const { gate, request, clock } = setup(makeStore());
    const stuck = await gate.admit({ key: 'k1', fingerprint: 'fp' });
    expect(stuck.outcome).toBe('miss');
    await expect(request('k1', 'fp', () => 'early')).rejects.toMatchObject({ code: 'KS_GATE_IN_PROGRESS' });
    clock.now += 5_000;
    await expect(request('k1', 'fp', () => 'second')).resolves.toEqual({ value: 'second', replayed: false });
    if (stuck.outcome !== 'miss') throw new Error('unreachable');
    await expect(stuck.execution.complete(JSON.stringify({ value: 'first' }))).resolves.toBe(false);
    await stuck.execution.fail();
    await expect(request('k1', 'fp', () => 'third')).resolves.toEqual({ value: 'second', replayed: true });
  });

  it('namespaces keys by tenant and records tenant.id', async () => {
    const { request, tracing, executions } = setup(makeStore());
    await request('k1', 'fp', () => 'acme', 'acme');
    await expect(request('k1', 'fp', () => 'globex', 'globex')).resolves.toEqual({
      value: 'globex',
      replayed: false,
    });
    expect(executions()).toBe(2);
    expect(tracing.decisions().map((d) => d['tenant.id'])).toEqual(['acme', 'globex']);
  });

  it('names one store per tenant when the key scope is tenant, and refuses a request without a tenant', async () => {
    const { request, tracing } = setup(makeStore(), { scope: nodeScope({ keyScope: 'tenant' }) });
    await request('k1', 'fp', () => 1, 'acme');
    expect(tracing.decisions()[0]).toMatchObject({
      'idempotency.store': 'payments/tenant:acme',
      'idempotency.scope': 'tenant',
      'tenant.id': 'acme',
    });
    await expect(request('k1', 'fp', () => 1)).rejects.toMatchObject({ code: 'KS_GATE_TENANT_MISSING' });
  });

  it('refuses a key longer than 255 characters with KS_GATE_KEY_INVALID', async () => {
    const { request, executions } = setup(makeStore());
    await expect(request('k'.repeat(256), 'fp', () => 1)).rejects.toMatchObject({
      code: 'KS_GATE_KEY_INVALID',
    });
    expect(executions()).toBe(0);
  });
});

describe('gate.run', () => {
  afterEach(() => {
    context.disable();
  });

  it('fails closed with KS_GATE_STORE_UNAVAILABLE when the store does not answer, and records error', async () => {
    const { request, tracing, executions } = setup(unavailableStore());
    await expect(request('k1', 'fp', () => 1)).rejects.toMatchObject({
      code: 'KS_GATE_STORE_UNAVAILABLE',
      httpStatus: 503,
      retryable: true,
    });
    expect(executions()).toBe(0);
    expect(tracing.decisions()[0]).toMatchObject({
      'idempotency.outcome': 'error',
      'idempotency.effect': 'none',
      'idempotency.released': false,
    });
  });

  it('records on the active span when none is given', async () => {
    context.setGlobalContextManager(new AsyncLocalContextManager());
    const [, makeStore] = STORES[0]!;
    const { gate, tracing } = setup(makeStore());
    const span = tracing.serverSpan();
    await context.with(trace.setSpan(context.active(), span), () => gate.run('k1', 'fp', async () => 1));
    span.end();
    expect(tracing.decisions()[0]).toMatchObject({ 'idempotency.key': 'k1', 'idempotency.outcome': 'miss' });
  });

  it('uses the store id it is given instead of the derived one', async () => {
    const [, makeStore] = STORES[0]!;
    const { request, tracing } = setup(makeStore(), { storeId: 'payments-redis-eu-1' });
    await request('k1', 'fp', () => 1);
    expect(tracing.decisions()[0]).toMatchObject({ 'idempotency.store': 'payments-redis-eu-1' });
  });

  it('refuses to start with a key scope that does not cover the retry scope', () => {
    const [, makeStore] = STORES[0]!;
    expect(() =>
      createIdempotencyGate({ store: makeStore(), scope: nodeScope({ retryScope: { level: 'cluster' } }) }),
    ).toThrow(IdempotencyScopeError);
  });

  it('reports the condition that makes it sound', () => {
    const [, makeStore] = STORES[0]!;
    const gate = createIdempotencyGate({
      store: makeStore(),
      scope: { placement: NODE_A, keyScope: 'node', retryScope: { level: 'cluster' }, pinning: 'enforced' },
    });
    expect(gate.mode).toBe('pinned');
    expect(gate.storeIdFor()).toBe(STORE_ID);
  });

  it('refuses unknown options and invalid TTLs with KS_GATE_CONFIG_INVALID', () => {
    const [, makeStore] = STORES[0]!;
    const store = makeStore();
    expect(() =>
      createIdempotencyGate({ store, scope: nodeScope(), ttlMilis: 5 } as unknown as IdempotencyGateOptions),
    ).toThrow(expect.objectContaining({ code: 'KS_GATE_CONFIG_INVALID' }));
    expect(() => createIdempotencyGate({ store, scope: nodeScope(), ttlMillis: 0 })).toThrow(
      expect.objectContaining({ code: 'KS_GATE_CONFIG_INVALID' }),
    );
    expect(() => createIdempotencyGate({ store, scope: nodeScope(), lockTtlMillis: 1.5 })).toThrow(
      expect.objectContaining({ code: 'KS_GATE_CONFIG_INVALID' }),
    );
  });
});
