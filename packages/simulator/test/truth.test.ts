import { describe, expect, it } from 'vitest';
import { classifyKey, type KeyHistory, type StoreVisit, type TouchingEvent } from '../src/truth.ts';

let nextSpan = 0;
/** A store visit at the payments tier; `send` names the CLIENT span it served. */
function visit(overrides: Partial<StoreVisit> & { send?: string } = {}): StoreVisit {
  const { send, ...rest } = overrides;
  nextSpan++;
  return {
    service: 'payments',
    operation: '/payments',
    store: 'node-a',
    node: 'a',
    tenant: 'acme',
    outcome: 'miss',
    admission: 'fresh',
    effect: 'committed',
    spanId: `span-${nextSpan}`,
    traceId: 'trace-1',
    startUnixMillis: nextSpan * 1000,
    clientSpanId: send ?? `send-${nextSpan}`,
    upstreamSpanId: undefined,
    visible: true,
    ...rest,
  };
}

function history(visits: StoreVisit[], extra: Partial<KeyHistory> = {}): KeyHistory {
  return { key: 'k1', tenants: ['acme'], visits, routingEvents: [], ...extra };
}

/** `id` broke one of the key's requests at `atUnixMillis`. */
function broke(id: string, atUnixMillis: number): TouchingEvent {
  return { id, how: 'broke', atUnixMillis };
}

describe('classifyKey', () => {
  it('calls a key clean when it executed once in one store', () => {
    const verdict = classifyKey(history([visit(), visit({ outcome: 'hit' })]));
    expect(verdict).toEqual({ keys: [], clean: true });
  });

  it('does not call a key clean when it never executed', () => {
    expect(classifyKey(history([visit({ outcome: 'error' })]))).toEqual({ keys: [], clean: false });
  });

  it('flags two misses of one key in two node stores as a cross-store duplicate', () => {
    const first = visit({ store: 'node-a' });
    const verdict = classifyKey(
      history([first, visit({ store: 'node-b', node: 'b' })], {
        routingEvents: [broke('node_down-1', first.startUnixMillis + 300)],
      }),
    );
    expect(verdict.clean).toBe(false);
    expect(verdict.keys).toHaveLength(1);
    expect(verdict.keys[0]).toMatchObject({
      class: 'cross_store_duplicate',
      stores: ['node-a', 'node-b'],
      retriedBy: 'client',
      routingEventId: 'node_down-1',
    });
    expect(verdict.keys[0]!.executions.map((e) => e.node)).toEqual(['a', 'b']);
  });

  it('names the cause of a same-store duplicate from how the repeat was admitted', () => {
    const expired = classifyKey(history([visit(), visit({ admission: 'expired' })]));
    expect(expired.keys[0]).toMatchObject({ class: 'same_store_duplicate', cause: 'ttl_expired' });
    const raced = classifyKey(history([visit(), visit({ admission: 'concurrent' })]));
    expect(raced.keys[0]).toMatchObject({ class: 'same_store_duplicate', cause: 'race' });
  });

  it('credits the proxy when one client send executed twice', () => {
    const verdict = classifyKey(history([visit({ send: 'c1' }), visit({ send: 'c1', store: 'node-b' })]));
    expect(verdict.keys[0]!.retriedBy).toBe('proxy');
  });

  it('calls a front-tier repeat that the downstream store answered with a hit absorbed', () => {
    const first = visit({ store: 'node-a' });
    const repeat = visit({ store: 'node-b' });
    const ledger = { service: 'ledger', operation: '/ledger/entries', store: 'ledger-eu' };
    const verdict = classifyKey(
      history([
        first,
        visit({ ...ledger, upstreamSpanId: first.spanId }),
        repeat,
        visit({ ...ledger, outcome: 'hit', upstreamSpanId: repeat.spanId }),
      ]),
    );
    expect(verdict.keys).toHaveLength(1);
    expect(verdict.keys[0]).toMatchObject({ class: 'absorbed_duplicate', service: 'payments' });
  });

  it('reports a repeat the downstream also executed at both tiers', () => {
    const first = visit({ store: 'node-a' });
    const repeat = visit({ store: 'node-b' });
    const ledger = { service: 'ledger', operation: '/ledger/entries' };
    const verdict = classifyKey(
      history([
        first,
        visit({ ...ledger, store: 'ledger-1', upstreamSpanId: first.spanId }),
        repeat,
        visit({ ...ledger, store: 'ledger-2', upstreamSpanId: repeat.spanId }),
      ]),
    );
    expect(verdict.keys.map((k) => `${k.service} ${k.class}`)).toEqual([
      'payments cross_store_duplicate',
      'ledger cross_store_duplicate',
    ]);
  });

  it('flags one execution whose attempts reached two stores as a scope violation', () => {
    const verdict = classifyKey(history([visit({ outcome: 'error' }), visit({ store: 'node-b' })]));
    expect(verdict.keys[0]).toMatchObject({
      class: 'scope_violation',
      stores: ['node-a', 'node-b'],
      retriedBy: 'client',
    });
    expect(verdict.keys[0]!.executions).toHaveLength(1);
  });

  it('counts an admitted attempt that failed before its effect as no execution: a scope violation', () => {
    const verdict = classifyKey(
      history([visit({ effect: 'none', send: 'c1' }), visit({ store: 'node-b', node: 'b', send: 'c1' })]),
    );
    expect(verdict.keys).toMatchObject([{ class: 'scope_violation', stores: ['node-a', 'node-b'] }]);
    expect(verdict.keys[0]!.executions).toHaveLength(1);
  });

  it('calls a key retried in the same store after a release before the effect clean', () => {
    const verdict = classifyKey(history([visit({ effect: 'none' }), visit({ admission: 'released' })]));
    expect(verdict).toEqual({ keys: [], clean: true });
  });

  it('counts an admitted attempt that failed after its effect as an execution', () => {
    const verdict = classifyKey(history([visit({ send: 'c1' }), visit({ store: 'node-b', send: 'c1' })]));
    expect(verdict.keys).toMatchObject([{ class: 'cross_store_duplicate', retriedBy: 'proxy' }]);
  });

  it('reports a key two tenants used as a collision, not as a duplicate', () => {
    const verdict = classifyKey(
      history(
        [
          visit({ tenant: 'acme', store: 'global' }),
          visit({ tenant: 'globex', store: 'global', outcome: 'hit' }),
        ],
        {
          tenants: ['acme', 'globex'],
        },
      ),
    );
    expect(verdict.keys).toHaveLength(1);
    expect(verdict.keys[0]).toMatchObject({
      class: 'key_collision',
      tenants: ['acme', 'globex'],
      retriedBy: 'client',
    });
  });

  it('names as the cause the failure that broke a request between the first execution and the repeat', () => {
    const first = visit({ store: 'node-a' });
    const repeat = visit({ store: 'node-b', node: 'b' });
    const verdict = classifyKey(
      history([first, repeat], {
        routingEvents: [
          broke('node_down-1', first.startUnixMillis - 500),
          { id: 'node_down-2', how: 'rerouted', atUnixMillis: first.startUnixMillis + 100 },
          broke('node_down-3', first.startUnixMillis + 200),
          broke('node_down-4', repeat.startUnixMillis + 100),
        ],
      }),
    );
    expect(verdict.keys[0]!.routingEventId).toBe('node_down-3');
  });

  it('names no cause when failures only rerouted a send or came before the first execution or after the repeat', () => {
    const first = visit({ store: 'node-a' });
    const repeat = visit({ store: 'node-b', node: 'b' });
    const verdict = classifyKey(
      history([first, repeat], {
        routingEvents: [
          broke('node_down-1', first.startUnixMillis - 1),
          { id: 'node_down-2', how: 'rerouted', atUnixMillis: first.startUnixMillis + 100 },
          broke('node_down-3', repeat.startUnixMillis + 1),
        ],
      }),
    );
    expect(verdict.keys[0]!.class).toBe('cross_store_duplicate');
    expect(verdict.keys[0]!.routingEventId).toBeUndefined();
  });

  it('names the store error on the first visit as the cause of a scope violation', () => {
    const failed = visit({ outcome: 'error' });
    const verdict = classifyKey(
      history([failed, visit({ store: 'node-b' })], {
        routingEvents: [broke('error_spike-1', failed.startUnixMillis)],
      }),
    );
    expect(verdict.keys[0]).toMatchObject({ class: 'scope_violation', routingEventId: 'error_spike-1' });
  });

  it('names no failure as the cause of a key collision', () => {
    const first = visit({ tenant: 'acme', store: 'global' });
    const verdict = classifyKey(
      history([first, visit({ tenant: 'globex', store: 'global', outcome: 'hit' })], {
        tenants: ['acme', 'globex'],
        routingEvents: [broke('node_down-1', first.startUnixMillis + 1)],
      }),
    );
    expect(verdict.keys[0]!.class).toBe('key_collision');
    expect(verdict.keys[0]!.routingEventId).toBeUndefined();
  });
});
