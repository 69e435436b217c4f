import { readFileSync } from 'node:fs';
import { isKeyscopeError } from '@keyscope/errors';
import { decodeTraceRequest, decodeTraces, encodeTraces } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import type { ServerAttempt } from '../src/attempt.ts';
import { extractAttempts } from '../src/extract-attempts.ts';
import {
  defaultMapping,
  loadMapping,
  MAPPING_FIELDS,
  mappingAttributeNames,
  mappingDecodeOptions,
  parseMapping,
} from '../src/mapping.ts';
import { clientSpan, internalSpan, resource, serverSpan } from '../src/testing.ts';

function codeOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (isKeyscopeError(error)) return error.code;
    throw error;
  }
  throw new Error('expected a KeyscopeError, nothing was thrown');
}

describe('business id', () => {
  it('names no attribute by default, and may be given an empty list', () => {
    expect(defaultMapping().fields.businessId).toEqual([]);
    expect(parseMapping({ fields: { businessId: [] } }).fields.businessId).toEqual([]);
    expect(parseMapping({ fields: { businessId: ['payment.id'] } }).fields.businessId).toEqual([
      'payment.id',
    ]);
  });

  it('refuses a list that is not of attribute names', () => {
    const code = (value: unknown) => codeOf(() => parseMapping({ fields: { businessId: value } }));
    expect(code('payment.id')).toBe('KS_MAPPING_WRONG_TYPE');
    expect(code([''])).toBe('KS_MAPPING_EMPTY_NAME');
    expect(code(['payment.id', 'payment.id'])).toBe('KS_MAPPING_INVALID_VALUE');
  });
});

describe('side-effect spans', () => {
  it('are none by default and read as a list of span names', () => {
    expect(defaultMapping().sideEffectSpans).toEqual([]);
    expect(parseMapping({ sideEffectSpans: ['ledger.charge', 'payments.capture'] }).sideEffectSpans).toEqual([
      'ledger.charge',
      'payments.capture',
    ]);
    expect(parseMapping({ sideEffectSpans: [] }).sideEffectSpans).toEqual([]);
    expect(Object.isFrozen(parseMapping({ sideEffectSpans: ['ledger.charge'] }).sideEffectSpans)).toBe(true);
  });

  it('refuses a list that is not of span names', () => {
    const code = (value: unknown) => codeOf(() => parseMapping({ sideEffectSpans: value }));
    expect(code('ledger.charge')).toBe('KS_MAPPING_WRONG_TYPE');
    expect(code([3])).toBe('KS_MAPPING_WRONG_TYPE');
    expect(code([' '])).toBe('KS_MAPPING_EMPTY_NAME');
    expect(code(['ledger.charge', 'ledger.charge'])).toBe('KS_MAPPING_INVALID_VALUE');
  });
});

describe('declared key scopes', () => {
  it('are none by default and read as service, optional operation and scope', () => {
    expect(defaultMapping().scopes).toEqual([]);
    expect(
      parseMapping({
        scopes: [
          { service: 'payments', scope: 'node' },
          { service: 'payments', operation: 'POST /refunds', scope: 'cluster' },
        ],
      }).scopes,
    ).toEqual([
      { service: 'payments', scope: 'node' },
      { service: 'payments', operation: 'POST /refunds', scope: 'cluster' },
    ]);
  });

  it('give a decision whose span declares neither scope nor store the store of its scope', () => {
    const mapping = parseMapping({ scopes: [{ service: 'payments', scope: 'node' }] });
    const decision = (attributes: Record<string, string>) =>
      extractAttempts(
        [
          serverSpan({
            key: 'k1',
            outcome: 'miss',
            resource: resource({ instance: 'payments-a' }),
            attributes,
          }),
        ],
        mapping,
      ).attempts[0] as ServerAttempt;
    expect(decision({})).toMatchObject({ store: 'payments/node:payments-a', scope: 'node' });
    expect(decision({ 'idempotency.scope': 'cluster' })).toMatchObject({ scope: 'cluster' });
    expect(decision({ 'idempotency.store': 'redis-1' })).toMatchObject({ store: 'redis-1', scope: '' });
  });

  it('refuse entries that are not a service, an optional operation and a scope, or that repeat', () => {
    const code = (scopes: unknown) => codeOf(() => parseMapping({ scopes }));
    expect(code({ service: 'payments', scope: 'node' })).toBe('KS_MAPPING_WRONG_TYPE');
    expect(code([{ service: 'payments' }])).toBe('KS_MAPPING_INVALID_VALUE');
    expect(code([{ service: 'payments', scope: 'rack' }])).toBe('KS_MAPPING_INVALID_VALUE');
    expect(code([{ service: '', scope: 'node' }])).toBe('KS_MAPPING_EMPTY_NAME');
    expect(code([{ service: 'payments', scope: 'node', store: 'x' }])).toBe('KS_MAPPING_UNKNOWN_KEY');
    expect(
      code([
        { service: 'payments', scope: 'node' },
        { service: 'payments', scope: 'cluster' },
      ]),
    ).toBe('KS_MAPPING_INVALID_VALUE');
  });
});

describe('default mapping', () => {
  it('lists the conventions of docs/design.md', () => {
    const { fields, ...options } = defaultMapping();
    expect(fields).toEqual({
      key: ['idempotency.key', 'http.request.header.idempotency-key'],
      outcome: ['idempotency.outcome'],
      hit: ['idempotency.hit'],
      store: ['idempotency.store'],
      scope: ['idempotency.scope'],
      tenant: ['tenant.id'],
      operation: ['http.route'],
      service: ['service.name'],
      node: ['service.instance.id', 'host.name'],
      cluster: ['k8s.cluster.name'],
      region: ['cloud.region'],
      zone: ['cloud.availability_zone'],
      resendCount: ['http.request.resend_count'],
      statusCode: ['http.response.status_code'],
      serverAddress: ['server.address'],
      serverPort: ['server.port'],
      peerAddress: ['network.peer.address'],
      errorType: ['error.type'],
      replayed: ['http.response.header.idempotent-replayed'],
      effect: ['idempotency.effect'],
      released: ['idempotency.released'],
      businessId: [],
      method: ['http.request.method', 'http.method'],
    });
    expect(options).toEqual({
      inferOutcomeFromHttp: false,
      keyNamespace: 'global',
      activityBucketMillis: 1000,
      sideEffectSpans: [],
      scopes: [],
      collapseOperationIds: true,
      operationIdPatterns: [],
    });
  });

  it('is frozen all the way down', () => {
    const mapping = defaultMapping();
    expect(Object.isFrozen(mapping)).toBe(true);
    expect(Object.isFrozen(mapping.fields)).toBe(true);
    expect(Object.isFrozen(mapping.fields.key)).toBe(true);
  });

  it('equals the documented example file', () => {
    const example = readFileSync(new URL('../mapping.example.yaml', import.meta.url), 'utf8');
    expect(loadMapping(example, 'mapping.example.yaml')).toEqual(defaultMapping());
  });
});

describe('mapping files', () => {
  it('reads YAML, replacing the fields it gives and keeping the other defaults', () => {
    const mapping = loadMapping(
      [
        'fields:',
        '  key: [idempotency.key, http.request.header.idempotency-key, app.request_id]',
        '  store: [dedup.store]',
        'inferOutcomeFromHttp: true',
        'keyNamespace: tenant',
        'activityBucketMillis: 5000',
      ].join('\n'),
      'mapping.yaml',
    );
    expect(mapping.fields.key).toEqual([
      'idempotency.key',
      'http.request.header.idempotency-key',
      'app.request_id',
    ]);
    expect(mapping.fields.store).toEqual(['dedup.store']);
    expect(mapping.fields.outcome).toEqual(['idempotency.outcome']);
    expect([mapping.inferOutcomeFromHttp, mapping.keyNamespace, mapping.activityBucketMillis]).toEqual([
      true,
      'tenant',
      5000,
    ]);
  });

  it('reads JSON', () => {
    const mapping = loadMapping(
      '{"fields": {"tenant": ["org.id"]}, "keyNamespace": "tenant"}',
      'mapping.json',
    );
    expect(mapping.fields.tenant).toEqual(['org.id']);
    expect(mapping.keyNamespace).toBe('tenant');
  });

  it('drives extraction: a custom key fallback and a replaced store attribute', () => {
    const mapping = parseMapping({
      fields: { key: ['idempotency.key', 'app.request_id'], store: ['dedup.store'] },
    });
    const { attempts } = extractAttempts(
      [
        serverSpan({
          outcome: 'miss',
          store: 'ignored-now',
          attributes: { 'app.request_id': 'r-1', 'dedup.store': 'redis-a' },
        }),
      ],
      mapping,
    );
    expect(attempts.map((a) => [a.key, (a as ServerAttempt).store])).toEqual([['r-1', 'redis-a']]);
  });

  it('drives placement from renamed resource attributes', () => {
    const mapping = parseMapping({ fields: { node: ['pod.name'] } });
    const podResource = resource({ instance: 'ignored', attributes: { 'pod.name': 'pod-1' } });
    const { attempts } = extractAttempts(
      [serverSpan({ key: 'k1', outcome: 'miss', scope: 'node', resource: podResource })],
      mapping,
    );
    expect((attempts[0] as ServerAttempt).store).toBe('payments/node:pod-1');
  });

  it('accepts an empty object as all defaults', () => {
    expect(parseMapping({})).toEqual(defaultMapping());
  });

  it('names the source and the path in its messages', () => {
    expect(() => loadMapping('fields:\n  ky: [a]\n', 'my-mapping.yaml')).toThrow(
      /my-mapping\.yaml: fields\.ky is not a known field; known: key, outcome/,
    );
  });
});

describe('mapping strictness', () => {
  it.each([
    ['text that is not YAML', 'fields: [unclosed', 'KS_MAPPING_SYNTAX'],
    ['a duplicated key', 'keyNamespace: global\nkeyNamespace: tenant\n', 'KS_MAPPING_SYNTAX'],
    ['an empty file', '', 'KS_MAPPING_WRONG_TYPE'],
    ['a list at the root', '- key\n', 'KS_MAPPING_WRONG_TYPE'],
  ])('refuses %s', (_, text, code) => {
    expect(codeOf(() => loadMapping(text, 'm.yaml'))).toBe(code);
  });

  it.each([
    ['an unknown option', { inferOutcome: true }, 'KS_MAPPING_UNKNOWN_KEY'],
    ['an unknown field', { fields: { ky: ['a'] } }, 'KS_MAPPING_UNKNOWN_KEY'],
    ['fields that are not an object', { fields: ['key'] }, 'KS_MAPPING_WRONG_TYPE'],
    ['a field that is a string, not a list', { fields: { key: 'idempotency.key' } }, 'KS_MAPPING_WRONG_TYPE'],
    ['a name that is not a string', { fields: { key: [42] } }, 'KS_MAPPING_WRONG_TYPE'],
    ['an empty list', { fields: { key: [] } }, 'KS_MAPPING_EMPTY_LIST'],
    ['an empty name', { fields: { key: ['idempotency.key', ''] } }, 'KS_MAPPING_EMPTY_NAME'],
    ['a blank name', { fields: { key: ['  '] } }, 'KS_MAPPING_EMPTY_NAME'],
    ['a name listed twice', { fields: { key: ['a', 'a'] } }, 'KS_MAPPING_INVALID_VALUE'],
    ['inferOutcomeFromHttp as a string', { inferOutcomeFromHttp: 'yes' }, 'KS_MAPPING_WRONG_TYPE'],
    ['keyNamespace that is not a string', { keyNamespace: 1 }, 'KS_MAPPING_WRONG_TYPE'],
    ['an unknown keyNamespace', { keyNamespace: 'region' }, 'KS_MAPPING_INVALID_VALUE'],
    ['activityBucketMillis as a string', { activityBucketMillis: '1s' }, 'KS_MAPPING_WRONG_TYPE'],
    ['a zero activityBucketMillis', { activityBucketMillis: 0 }, 'KS_MAPPING_INVALID_VALUE'],
    ['a fractional activityBucketMillis', { activityBucketMillis: 1.5 }, 'KS_MAPPING_INVALID_VALUE'],
  ])('refuses %s', (_, value, code) => {
    expect(codeOf(() => parseMapping(value))).toBe(code);
  });

  it('throws permanent errors', () => {
    try {
      parseMapping({ fields: { ky: ['a'] } });
    } catch (error) {
      expect(isKeyscopeError(error) && !error.retryable).toBe(true);
      return;
    }
    throw new Error('expected an error');
  });
});

describe('mapping attribute names', () => {
  it('lists every name read from spans in the span set, and every name in the resource set', () => {
    const mapping = parseMapping({
      fields: { key: ['idempotency.key', 'app.request_id'], node: ['pod.name'] },
    });
    const names = mappingAttributeNames(mapping);
    for (const field of MAPPING_FIELDS) {
      for (const name of mapping.fields[field]) expect(names.resource.has(name)).toBe(true);
    }
    expect(names.span.has('app.request_id')).toBe(true);
    expect(names.span.has('http.response.header.idempotent-replayed')).toBe(true);
    expect(names.resource.has('pod.name')).toBe(true);
    expect(names.resource.has('service.name')).toBe(true);
  });

  it('leaves placement names out of the span set, since placement is read from the resource only', () => {
    const names = mappingAttributeNames(defaultMapping());
    expect(names.span.has('service.name')).toBe(false);
    expect(names.span.has('host.name')).toBe(false);
  });

  it('is enough: extraction reads the same attempts from spans filtered to those names', () => {
    const mapping = defaultMapping();
    const names = mappingAttributeNames(mapping);
    const full = serverSpan({
      key: 'k1',
      outcome: 'miss',
      scope: 'node',
      route: '/pay',
      attributes: { 'http.request.method': 'POST', 'user_agent.original': 'curl' },
    });
    const keep = (attributes: Record<string, unknown>, allowed: Set<string>) =>
      Object.assign(
        Object.create(null),
        Object.fromEntries(Object.entries(attributes).filter(([name]) => allowed.has(name))),
      );
    const filtered = {
      ...full,
      attributes: keep(full.attributes, names.span),
      resource: { attributes: keep(full.resource.attributes, names.resource) },
    };
    expect(extractAttempts([filtered], mapping).attempts).toEqual(extractAttempts([full], mapping).attempts);
  });
});

describe('mapping decode options', () => {
  const mapping = defaultMapping();
  const keyedNode = resource({
    instance: 'payments-b-1',
    attributes: { 'idempotency.key': 'from-resource' },
  });
  const spans = [
    // No key: counted into node activity, a 503 as an error although its status is UNSET.
    serverSpan({ statusCode: 503, route: '/pay', attributes: { 'server.address': 'lb' } }),
    serverSpan({ statusCode: 200, route: '/pay' }),
    clientSpan({ route: '/pay', attributes: { 'server.address': 'payments', 'server.port': 443 } }),
    // Keyed, with what is read on keyed spans only before the key on the wire.
    clientSpan({
      attributes: {
        'server.address': 'payments',
        'server.port': 443,
        'http.request.resend_count': 1,
        'http.request.header.idempotency-key': ['k-2'],
      },
    }),
    serverSpan({ key: 'k-1', outcome: 'miss', scope: 'node', tenant: 't-1', route: '/pay', statusCode: 201 }),
    internalSpan({ key: 'k-1', hit: true, store: 'redis-a' }),
    serverSpan({ statusCode: 201, route: '/refund', resource: keyedNode }),
  ];
  const bytes = encodeTraces(spans);

  it('extract the same attempts and node activity as a full decode', () => {
    const selected = extractAttempts(decodeTraces(bytes, mappingDecodeOptions(mapping)), mapping);
    expect(selected).toEqual(extractAttempts(decodeTraces(bytes), mapping));
    expect(selected.attempts.map((attempt) => attempt.kind)).toEqual([
      'client',
      'server',
      'server',
      'arrival',
    ]);
    expect(selected.activity.reduce((sum, bucket) => sum + bucket.errors, 0)).toBe(1);
  });

  it('leave the attributes read only on keyed spans off the spans without a key', () => {
    const decoded = decodeTraces(bytes, mappingDecodeOptions(mapping, 'all'));
    expect({ ...decoded[0]!.attributes }).toEqual({ 'http.response.status_code': 503 });
    expect({ ...decoded[2]!.attributes }).toEqual({});
    expect(decoded[3]!.attributes['server.address']).toBe('payments');
    expect(decoded[6]!.attributes['http.route']).toBe('/refund');
  });

  it('return no span without a key unless it is a SERVER span, and count every span', () => {
    const { spans: read, spanCount } = decodeTraceRequest(bytes, mappingDecodeOptions(mapping));
    // The unkeyed CLIENT span (the third) is the one left out.
    expect(read.map((span) => span.kind)).toEqual([2, 2, 3, 2, 1, 2]);
    expect(spanCount).toBe(spans.length);
    const all = decodeTraceRequest(bytes, mappingDecodeOptions(mapping, 'all'));
    expect(all.spans).toHaveLength(spans.length);
    expect(all.spanCount).toBe(spans.length);
    expect(read).toEqual(all.spans.filter((_, i) => i !== 2));
  });

  it('return a failed CLIENT span without a key with its ids and what a send is read by', () => {
    const timedOut = clientSpan({
      id: 0xc1,
      parentSpanId: '00000000000000aa',
      error: true,
      statusMessage: 'timed out',
      route: '/pay',
      attributes: {
        'server.address': 'payments',
        'error.type': 'timeout',
        'url.full': 'https://payments/pay',
      },
    });
    const body = encodeTraces([...spans, timedOut]);
    for (const variant of ['read', 'all'] as const) {
      const decoded = decodeTraces(body, mappingDecodeOptions(mapping, variant));
      const send = decoded.find((span) => span.spanId === timedOut.spanId)!;
      expect(send).toMatchObject({ parentSpanId: '00000000000000aa', name: timedOut.name });
      expect({ ...send.attributes }).toEqual({
        'http.route': '/pay',
        'server.address': 'payments',
        'error.type': 'timeout',
      });
      expect(extractAttempts(decoded, mapping).keylessSends).toEqual(
        extractAttempts([timedOut], mapping).keylessSends,
      );
    }
  });

  it('keep what a failed admission is judged by: status, effect, release and side-effect spans', () => {
    const declaring = parseMapping({ sideEffectSpans: ['ledger.charge'] });
    const failure = encodeTraces([
      serverSpan({
        key: 'k-9',
        statusCode: 503,
        error: true,
        attributes: { 'idempotency.effect': 'none', 'idempotency.released': true },
      }),
      internalSpan({ key: 'k-9', outcome: 'miss', error: true }),
      internalSpan({ key: 'k-9', name: 'ledger.charge', parentSpanId: 'cccccccccccccccc' }),
    ]);
    const selected = extractAttempts(decodeTraces(failure, mappingDecodeOptions(declaring)), declaring);
    expect(selected.attempts).toEqual(extractAttempts(decodeTraces(failure), declaring).attempts);
    expect(selected.attempts).toMatchObject([
      { kind: 'arrival', statusCode: 503, failed: true, effect: 'none', released: true },
      { kind: 'server', failed: true, effectSpansDeclared: true },
      { kind: 'effect', operation: 'ledger.charge', parentSpanId: 'cccccccccccccccc' },
    ]);
  });

  it('are one object per mapping and span choice, sharing their key sets', () => {
    const read = mappingDecodeOptions(mapping);
    const all = mappingDecodeOptions(mapping, 'all');
    expect(read).toBe(mappingDecodeOptions(mapping, 'read'));
    expect(all).toBe(mappingDecodeOptions(mapping, 'all'));
    expect(read.events).toBe(false);
    expect(all.events).toBe(false);
    // The decoders cache decoded resources per resource key set.
    expect(all.resourceAttributes).toBe(read.resourceAttributes);
  });
});
