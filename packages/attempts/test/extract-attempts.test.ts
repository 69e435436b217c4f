import { SpanKind } from '@keyscope/otlp';
import { describe, expect, it } from 'vitest';
import type { Arrival, ClientAttempt, ServerAttempt, SideEffect } from '../src/attempt.ts';
import { extractAttempts } from '../src/extract-attempts.ts';
import { defaultMapping, parseMapping } from '../src/mapping.ts';
import { clientSpan, internalSpan, resource, serverSpan, span } from '../src/testing.ts';

const mapping = defaultMapping();
const inferring = parseMapping({ inferOutcomeFromHttp: true });

function only<T>(spans: Parameters<typeof extractAttempts>[0], using = mapping): T {
  const { attempts } = extractAttempts(spans, using);
  expect(attempts).toHaveLength(1);
  return attempts[0] as T;
}

describe('server attempts', () => {
  it('turns a keyed SERVER span with an outcome into a server attempt with every base field', () => {
    const placement = resource({
      service: 'payments',
      instance: 'payments-a-1',
      cluster: 'eu-1',
      region: 'eu-west-1',
      zone: 'eu-west-1a',
    });
    const input = serverSpan({
      key: 'k1',
      outcome: 'miss',
      store: 'redis-a',
      scope: 'node',
      tenant: 'acme',
      route: '/payments',
      startMillis: 1000,
      durationMillis: 20,
      parentSpanId: 'aaaaaaaaaaaaaaaa',
      resource: placement,
    });
    expect(only<ServerAttempt>([input])).toEqual({
      kind: 'server',
      key: 'k1',
      tenant: 'acme',
      traceId: input.traceId,
      spanId: input.spanId,
      parentSpanId: 'aaaaaaaaaaaaaaaa',
      startUnixMillis: 1000,
      endUnixMillis: 1020,
      placement: {
        service: 'payments',
        node: 'payments-a-1',
        cluster: 'eu-1',
        region: 'eu-west-1',
        zone: 'eu-west-1a',
      },
      operation: '/payments',
      outcome: 'miss',
      store: 'redis-a',
      scope: 'node',
      statusCode: 0,
      failed: false,
      effect: '',
      released: false,
      businessId: '',
      effectSpansDeclared: false,
      method: '',
    });
  });

  it.each(['miss', 'hit', 'in_progress', 'mismatch', 'error'])('accepts the outcome %s', (outcome) => {
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', outcome })]).outcome).toBe(outcome);
  });

  it('reads idempotency.hit true as a hit and false as a miss when no outcome is recorded', () => {
    const { attempts } = extractAttempts(
      [serverSpan({ key: 'k1', hit: true }), serverSpan({ key: 'k2', hit: false })],
      mapping,
    );
    expect(attempts.map((a) => (a as ServerAttempt).outcome)).toEqual(['hit', 'miss']);
  });

  it('prefers the recorded outcome over the hit boolean', () => {
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', outcome: 'miss', hit: true })]).outcome).toBe('miss');
  });

  it('takes the key from the idempotency-key request header, first value, when idempotency.key is absent', () => {
    const input = serverSpan({
      outcome: 'miss',
      attributes: { 'http.request.header.idempotency-key': ['from-header', 'second'] },
    });
    expect(only<ServerAttempt>([input]).key).toBe('from-header');
  });

  it('prefers idempotency.key over the header', () => {
    const input = serverSpan({
      key: 'from-attribute',
      outcome: 'miss',
      attributes: { 'http.request.header.idempotency-key': ['from-header'] },
    });
    expect(only<ServerAttempt>([input]).key).toBe('from-attribute');
  });

  it('falls back to the header when idempotency.key is an empty string', () => {
    const input = serverSpan({
      key: '',
      outcome: 'miss',
      attributes: { 'http.request.header.idempotency-key': ['from-header'] },
    });
    expect(only<ServerAttempt>([input]).key).toBe('from-header');
  });

  it('reads a field from resource attributes when the span does not carry it', () => {
    const tenantResource = resource({ attributes: { 'tenant.id': 'acme', 'idempotency.scope': 'region' } });
    const attempt = only<ServerAttempt>([
      serverSpan({ key: 'k1', outcome: 'miss', resource: tenantResource }),
    ]);
    expect(attempt.tenant).toBe('acme');
    expect(attempt.scope).toBe('region');
  });

  it('prefers the span attribute over the resource attribute of the same name', () => {
    const tenantResource = resource({ attributes: { 'tenant.id': 'from-resource' } });
    const input = serverSpan({ key: 'k1', outcome: 'miss', tenant: 'from-span', resource: tenantResource });
    expect(only<ServerAttempt>([input]).tenant).toBe('from-span');
  });

  it('uses the span name as the operation when http.route is absent', () => {
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', outcome: 'miss', name: 'charge' })]).operation).toBe(
      'charge',
    );
  });

  it('leaves tenant and scope empty when the span declares neither', () => {
    const attempt = only<ServerAttempt>([serverSpan({ key: 'k1', outcome: 'miss' })]);
    expect(attempt.tenant).toBe('');
    expect(attempt.scope).toBe('');
  });

  it('takes the node from host.name when service.instance.id is absent', () => {
    const hostOnly = resource({ service: 'payments', host: 'host-7' });
    expect(
      only<ServerAttempt>([serverSpan({ key: 'k1', outcome: 'miss', resource: hostOnly })]).placement.node,
    ).toBe('host-7');
  });

  it('makes an INTERNAL span carrying the dedup decision a server attempt', () => {
    expect(only<ServerAttempt>([internalSpan({ key: 'k1', outcome: 'hit' })]).kind).toBe('server');
  });

  it('makes an UNSPECIFIED span with an outcome a server attempt', () => {
    expect(only<ServerAttempt>([span({ kind: SpanKind.UNSPECIFIED, key: 'k1', outcome: 'miss' })]).kind).toBe(
      'server',
    );
  });

  it('makes PRODUCER and CONSUMER spans server attempts only when they carry an outcome', () => {
    const { attempts } = extractAttempts(
      [
        span({ kind: SpanKind.PRODUCER, key: 'k1' }),
        span({ kind: SpanKind.CONSUMER, key: 'k1' }),
        span({ kind: SpanKind.CONSUMER, key: 'k1', outcome: 'miss' }),
        span({ kind: SpanKind.PRODUCER, key: 'k1', hit: true }),
      ],
      mapping,
    );
    expect(attempts.map((a) => [a.kind, (a as ServerAttempt).outcome])).toEqual([
      ['server', 'miss'],
      ['server', 'hit'],
    ]);
  });

  it('ignores an INTERNAL span that carries a key but no outcome', () => {
    expect(extractAttempts([internalSpan({ key: 'k1' })], mapping).attempts).toEqual([]);
  });

  it('ignores spans without a key', () => {
    const result = extractAttempts(
      [serverSpan({ outcome: 'miss' }), clientSpan(), internalSpan({ outcome: 'hit' })],
      mapping,
    );
    expect(result.attempts).toEqual([]);
  });

  it('makes no attempt of a span without ids, however keyed its attributes, and still counts its activity', () => {
    // Under the mapping's keyed selection the decoder gives a span without a key no ids.
    const idless = {
      ...serverSpan({ key: 'k1', outcome: 'miss' }),
      traceId: '',
      spanId: '',
      parentSpanId: '',
    };
    const result = extractAttempts([idless], mapping);
    expect(result.attempts).toEqual([]);
    expect(result.activity.map((a) => a.spans)).toEqual([1]);
  });

  it('shares one frozen placement object among all spans of one resource', () => {
    const shared = resource({ instance: 'payments-b-2' });
    const { attempts } = extractAttempts(
      [
        serverSpan({ key: 'k1', outcome: 'miss', resource: shared }),
        serverSpan({ key: 'k2', outcome: 'miss', resource: resource() }),
        serverSpan({ key: 'k3', outcome: 'miss', resource: shared }),
      ],
      mapping,
    );
    expect(attempts[0]!.placement).toBe(attempts[2]!.placement);
    expect(attempts[0]!.placement).not.toBe(attempts[1]!.placement);
    expect(Object.isFrozen(attempts[0]!.placement)).toBe(true);
  });
});

describe('invalid values', () => {
  it('refuses an outcome outside the closed list and counts it', () => {
    const result = extractAttempts(
      [serverSpan({ key: 'k1', outcome: 'HIT' }), serverSpan({ key: 'k2', outcome: 'skipped' })],
      mapping,
    );
    expect(result.attempts).toEqual([]);
    expect(result.invalid).toEqual({ outcome: 2, hit: 0, scope: 0 });
  });

  it('refuses an outcome of the wrong type and counts it', () => {
    const result = extractAttempts(
      [serverSpan({ key: 'k1', attributes: { 'idempotency.outcome': 1 } })],
      mapping,
    );
    expect(result.attempts).toEqual([]);
    expect(result.invalid.outcome).toBe(1);
  });

  it('refuses a hit value that is not a boolean and counts it', () => {
    const result = extractAttempts([serverSpan({ key: 'k1', hit: 'true' })], mapping);
    expect(result.attempts).toEqual([]);
    expect(result.invalid).toEqual({ outcome: 0, hit: 1, scope: 0 });
  });

  it('keeps the attempt with an empty scope when the scope is outside the closed list, and counts it', () => {
    const result = extractAttempts(
      [serverSpan({ key: 'k1', outcome: 'miss', scope: 'datacenter' })],
      mapping,
    );
    expect(result.invalid).toEqual({ outcome: 0, hit: 0, scope: 1 });
    const attempt = result.attempts[0] as ServerAttempt;
    expect(attempt.scope).toBe('');
    expect(attempt.store).toBe('payments/unknown');
  });

  it('reports zero counts for clean input', () => {
    expect(extractAttempts([serverSpan({ key: 'k1', outcome: 'miss' })], mapping).invalid).toEqual({
      outcome: 0,
      hit: 0,
      scope: 0,
    });
  });
});

describe('business ids', () => {
  const naming = parseMapping({ fields: { businessId: ['payment.id', 'order.id'] } });

  it('reads the business id of server attempts and arrivals from the attributes the mapping names', () => {
    const { attempts } = extractAttempts(
      [
        serverSpan({ key: 'k1', outcome: 'miss', attributes: { 'payment.id': 'pay_123' } }),
        serverSpan({ key: 'k1', attributes: { 'order.id': 4711 } }),
        serverSpan({ key: 'k2', outcome: 'miss' }),
      ],
      naming,
    );
    expect(attempts.map((a) => (a as ServerAttempt | Arrival).businessId)).toEqual(['pay_123', '4711', '']);
  });

  it('reads none under the default mapping, which names no attribute for it', () => {
    const attempt = only<ServerAttempt>(
      [serverSpan({ key: 'k1', outcome: 'miss', attributes: { 'payment.id': 'pay_123' } })],
      mapping,
    );
    expect(attempt.businessId).toBe('');
  });
});

describe('arrivals', () => {
  it('turns a keyed SERVER span without an outcome into an arrival', () => {
    const input = serverSpan({ key: 'k1', route: '/payments', tenant: 'acme' });
    expect(only<Arrival>([input])).toEqual({
      kind: 'arrival',
      key: 'k1',
      tenant: 'acme',
      traceId: input.traceId,
      spanId: input.spanId,
      parentSpanId: '',
      startUnixMillis: input.startTimeUnixMillis,
      endUnixMillis: input.endTimeUnixMillis,
      placement: { service: 'payments', node: 'payments-a-1', cluster: '', region: '', zone: '' },
      operation: '/payments',
      statusCode: 0,
      failed: false,
      effect: '',
      released: false,
      businessId: '',
      method: '',
    });
  });

  it('reads the request method of either convention, upper-cased, and _OTHER for one outside the list', () => {
    const methods = extractAttempts(
      [
        serverSpan({ key: 'k1', attributes: { 'http.request.method': 'POST' } }),
        serverSpan({ key: 'k2', attributes: { 'http.method': 'put' } }),
        serverSpan({ key: 'k3', attributes: { 'http.request.method': 'PURGE' } }),
        serverSpan({ key: 'k4' }),
      ],
      mapping,
    ).attempts.map((a) => (a as Arrival).method);
    expect(methods).toEqual(['POST', 'PUT', '_OTHER', '']);
  });

  it('does not infer outcomes from HTTP by default', () => {
    expect(only<Arrival>([serverSpan({ key: 'k1', statusCode: 200 })]).kind).toBe('arrival');
  });
});

describe('outcome inference from HTTP', () => {
  it('infers a hit from the Idempotent-Replayed response header', () => {
    const input = serverSpan({
      key: 'k1',
      statusCode: 200,
      attributes: { 'http.response.header.idempotent-replayed': ['true'] },
    });
    expect(only<ServerAttempt>([input], inferring).outcome).toBe('hit');
  });

  it('infers in_progress from 409', () => {
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', statusCode: 409 })], inferring).outcome).toBe(
      'in_progress',
    );
  });

  it('infers mismatch from 422', () => {
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', statusCode: 422 })], inferring).outcome).toBe(
      'mismatch',
    );
  });

  it.each([200, 201, 204, 299])('infers miss from %i', (statusCode) => {
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', statusCode })], inferring).outcome).toBe('miss');
  });

  it('reads a replayed header of false as no replay', () => {
    const input = serverSpan({
      key: 'k1',
      statusCode: 201,
      attributes: { 'http.response.header.idempotent-replayed': ['false'] },
    });
    expect(only<ServerAttempt>([input], inferring).outcome).toBe('miss');
  });

  it.each([400, 404, 500, 503])('keeps a span answered %i an arrival', (statusCode) => {
    expect(only<Arrival>([serverSpan({ key: 'k1', statusCode })], inferring).kind).toBe('arrival');
  });

  it('keeps a span without a status code an arrival', () => {
    expect(only<Arrival>([serverSpan({ key: 'k1' })], inferring).kind).toBe('arrival');
  });

  it('never overrides a recorded outcome', () => {
    expect(
      only<ServerAttempt>([serverSpan({ key: 'k1', outcome: 'hit', statusCode: 201 })], inferring).outcome,
    ).toBe('hit');
  });

  it('marks an inferred outcome as read from HTTP, and a recorded one not', () => {
    const replayed = serverSpan({
      key: 'k1',
      statusCode: 200,
      attributes: { 'http.response.header.idempotent-replayed': ['true'] },
    });
    expect(only<ServerAttempt>([replayed], inferring).outcomeFrom).toBe('http');
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', statusCode: 201 })], inferring).outcomeFrom).toBe(
      'http',
    );
    const recorded = only<ServerAttempt>(
      [serverSpan({ key: 'k1', outcome: 'miss', statusCode: 201 })],
      inferring,
    );
    expect(recorded).not.toHaveProperty('outcomeFrom');
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', outcome: 'miss' })])).not.toHaveProperty(
      'outcomeFrom',
    );
  });

  it('infers only on SERVER spans', () => {
    expect(extractAttempts([internalSpan({ key: 'k1', statusCode: 200 })], inferring).attempts).toEqual([]);
  });
});

describe('client attempts', () => {
  it('turns a keyed CLIENT span into a client attempt with defaults for everything unrecorded', () => {
    const input = clientSpan({ key: 'k1', name: 'POST' });
    expect(only<ClientAttempt>([input])).toEqual({
      kind: 'client',
      key: 'k1',
      tenant: '',
      traceId: input.traceId,
      spanId: input.spanId,
      parentSpanId: '',
      startUnixMillis: input.startTimeUnixMillis,
      endUnixMillis: input.endTimeUnixMillis,
      placement: { service: 'payments', node: 'payments-a-1', cluster: '', region: '', zone: '' },
      operation: 'POST',
      resendCount: 0,
      target: '',
      statusCode: 0,
      error: '',
    });
  });

  it('reads the resend count, status code, and server address with port', () => {
    const attempt = only<ClientAttempt>([
      clientSpan({
        key: 'k1',
        statusCode: 201,
        attributes: {
          'http.request.resend_count': 2,
          'server.address': 'api.example.com',
          'server.port': 8443,
        },
      }),
    ]);
    expect([attempt.resendCount, attempt.statusCode, attempt.target]).toEqual([
      2,
      201,
      'api.example.com:8443',
    ]);
  });

  it('reads a resend count the decoder kept as a bigint', () => {
    const input = clientSpan({ key: 'k1', attributes: { 'http.request.resend_count': 3n } });
    expect(only<ClientAttempt>([input]).resendCount).toBe(3);
  });

  it('uses the server address alone when the port is absent', () => {
    const input = clientSpan({ key: 'k1', attributes: { 'server.address': 'api.example.com' } });
    expect(only<ClientAttempt>([input]).target).toBe('api.example.com');
  });

  it('falls back to the network peer address as the target', () => {
    const input = clientSpan({ key: 'k1', attributes: { 'network.peer.address': '10.0.0.7' } });
    expect(only<ClientAttempt>([input]).target).toBe('10.0.0.7');
  });

  it('takes the error from error.type first', () => {
    const input = clientSpan({
      key: 'k1',
      error: true,
      statusMessage: 'socket hang up',
      attributes: { 'error.type': 'timeout' },
    });
    expect(only<ClientAttempt>([input]).error).toBe('timeout');
  });

  it('takes the error from the status message of an ERROR span without error.type', () => {
    expect(
      only<ClientAttempt>([clientSpan({ key: 'k1', error: true, statusMessage: 'socket hang up' })]).error,
    ).toBe('socket hang up');
  });

  it('takes the status message over an error.type that names only a generic class', () => {
    // The Node HTTP instrumentation on a connection a proxy closed: error.type Error, "socket hang up".
    const input = clientSpan({
      key: 'k1',
      error: true,
      statusMessage: 'socket hang up',
      attributes: { 'error.type': 'Error' },
    });
    expect(only<ClientAttempt>([input]).error).toBe('socket hang up');
    const bare = clientSpan({ key: 'k1', error: true, attributes: { 'error.type': 'Error' } });
    expect(only<ClientAttempt>([bare]).error).toBe('Error');
  });

  it("says 'error' for an ERROR span with no message and no error.type", () => {
    expect(only<ClientAttempt>([clientSpan({ key: 'k1', error: true })]).error).toBe('error');
  });

  it('ignores an outcome attribute on a client span', () => {
    expect(only<ClientAttempt>([clientSpan({ key: 'k1', outcome: 'miss' })]).kind).toBe('client');
  });
});

describe('keyless sends', () => {
  const timedOut = (options: Parameters<typeof clientSpan>[0] = {}) =>
    clientSpan({
      statusMessage: 'request to payments timed out after 2000 ms',
      error: true,
      parentSpanId: '00000000000000aa',
      attributes: { 'server.address': 'payments', 'server.port': 443, 'error.type': 'timeout' },
      ...options,
    });

  it('hands a CLIENT span without a key that failed to the linker as a send without key or tenant', () => {
    const span = timedOut({
      id: 0xc1,
      tenant: 't1',
      attributes: { 'server.address': 'payments', 'error.type': 'timeout', 'http.request.resend_count': 1 },
    });
    const result = extractAttempts([span], mapping);
    expect(result.attempts).toEqual([]);
    expect(result.keylessSends).toEqual([
      {
        kind: 'client',
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: '00000000000000aa',
        startUnixMillis: span.startTimeUnixMillis,
        endUnixMillis: span.endTimeUnixMillis,
        placement: { service: 'payments', node: 'payments-a-1', cluster: '', region: '', zone: '' },
        operation: 'POST /payments',
        resendCount: 1,
        target: 'payments',
        statusCode: 0,
        error: 'timeout',
      },
    ]);
  });

  it('hands over only a send whose status is ERROR, not one that got its answer', () => {
    const result = extractAttempts(
      [
        clientSpan({ id: 1, statusCode: 503, error: true, attributes: { 'error.type': '503' } }),
        clientSpan({ id: 2, error: true }),
        clientSpan({ id: 3, statusCode: 201 }),
        clientSpan({ id: 4 }), // a query: no HTTP status, no error
        timedOut({ id: 5, key: 'k1' }), // carries its key: a client attempt
        serverSpan({ id: 6, error: true }),
      ],
      mapping,
    );
    expect(result.keylessSends!.map((send) => [send.spanId, send.statusCode, send.error])).toEqual([
      ['0000000000000001', 503, '503'],
      ['0000000000000002', 0, 'error'],
    ]);
    expect(result.attempts.map((a) => a.kind)).toEqual(['client']);
  });

  it('hands over no send of a span without ids', () => {
    const idless = { ...timedOut(), traceId: '', spanId: '', parentSpanId: '' };
    expect(extractAttempts([idless], mapping).keylessSends).toEqual([]);
  });

  it('cuts a send’s target and error to the limits, as a client attempt’s', () => {
    const limits = {
      notBeforeUnixMillis: 0,
      notAfterUnixMillis: Number.MAX_SAFE_INTEGER,
      maxKeyBytes: 256,
      maxNameBytes: 16,
      maxValueBytes: 8,
    };
    const result = extractAttempts(
      [timedOut({ attributes: { 'error.type': 'connection reset by peer' } })],
      mapping,
      limits,
    );
    expect(result.keylessSends!.map((send) => [send.operation, send.error])).toEqual([
      ['POST /payments', 'connecti'],
    ]);
    expect(result.refusals.truncatedValues).toBe(0);
  });
});

describe('how a request ended', () => {
  it('reads the HTTP status and the ERROR status of a SERVER span that admitted its key', () => {
    const attempt = only<ServerAttempt>([
      serverSpan({
        key: 'k1',
        outcome: 'miss',
        statusCode: 503,
        error: true,
        statusMessage: 'processor down',
      }),
    ]);
    expect([attempt.outcome, attempt.statusCode, attempt.failed]).toEqual(['miss', 503, true]);
  });

  it('counts a 5xx without ERROR status as failed, and a 4xx as not', () => {
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', outcome: 'miss', statusCode: 500 })]).failed).toBe(
      true,
    );
    expect(only<ServerAttempt>([serverSpan({ key: 'k1', outcome: 'miss', statusCode: 402 })]).failed).toBe(
      false,
    );
  });

  it('reads the decision span’s own status on an INTERNAL decision span', () => {
    const attempt = only<ServerAttempt>([internalSpan({ key: 'k1', outcome: 'miss', error: true })]);
    expect([attempt.statusCode, attempt.failed]).toEqual([0, true]);
  });

  it('reads the failure of the SERVER span an arrival is', () => {
    const input = serverSpan({ key: 'k1', statusCode: 503, error: true });
    expect(only<Arrival>([input])).toMatchObject({ kind: 'arrival', statusCode: 503, failed: true });
  });

  it('reads idempotency.effect and idempotency.released on a decision and on a SERVER span', () => {
    const stated = { 'idempotency.effect': 'none', 'idempotency.released': true };
    expect(
      only<ServerAttempt>([internalSpan({ key: 'k1', outcome: 'miss', attributes: stated })]),
    ).toMatchObject({
      effect: 'none',
      released: true,
    });
    expect(only<Arrival>([serverSpan({ key: 'k1', attributes: stated })])).toMatchObject({
      effect: 'none',
      released: true,
    });
  });

  it('reads an effect outside committed, none and unknown as unknown, and released only when true', () => {
    const attempt = only<ServerAttempt>([
      serverSpan({
        key: 'k1',
        outcome: 'miss',
        attributes: { 'idempotency.effect': 'charged', 'idempotency.released': 'yes' },
      }),
    ]);
    expect([attempt.effect, attempt.released]).toEqual(['unknown', false]);
    const textual = only<ServerAttempt>([
      serverSpan({ key: 'k1', outcome: 'miss', attributes: { 'idempotency.released': 'true' } }),
    ]);
    expect(textual.released).toBe(true);
  });

  it('follows renamed effect and released attributes', () => {
    const renamed = parseMapping({ fields: { effect: ['app.charge_state'], released: ['app.key_freed'] } });
    const attempt = only<ServerAttempt>(
      [
        serverSpan({
          key: 'k1',
          outcome: 'miss',
          attributes: {
            'app.charge_state': 'committed',
            'app.key_freed': true,
            'idempotency.effect': 'none',
          },
        }),
      ],
      renamed,
    );
    expect([attempt.effect, attempt.released]).toEqual(['committed', true]);
  });
});

describe('side effects', () => {
  const declaring = parseMapping({ sideEffectSpans: ['ledger.charge'] });

  it('turns a keyed span named as the side effect into a SideEffect, of any kind', () => {
    for (const make of [internalSpan, clientSpan]) {
      const input = make({ key: 'k1', name: 'ledger.charge', parentSpanId: 'bbbbbbbbbbbbbbbb' });
      expect(only<SideEffect>([input], declaring)).toEqual({
        kind: 'effect',
        key: 'k1',
        tenant: '',
        traceId: input.traceId,
        spanId: input.spanId,
        parentSpanId: 'bbbbbbbbbbbbbbbb',
        startUnixMillis: input.startTimeUnixMillis,
        endUnixMillis: input.endTimeUnixMillis,
        placement: { service: 'payments', node: 'payments-a-1', cluster: '', region: '', zone: '' },
        operation: 'ledger.charge',
        failed: false,
      });
    }
  });

  it('marks a side-effect span that failed', () => {
    const input = internalSpan({ key: 'k1', name: 'ledger.charge', error: true });
    expect(only<SideEffect>([input], declaring).failed).toBe(true);
  });

  it('keeps a side-effect span that records a store decision a server attempt', () => {
    const input = serverSpan({ key: 'k1', name: 'ledger.charge', outcome: 'hit' });
    expect(only<ServerAttempt>([input], declaring).kind).toBe('server');
  });

  it('makes no side effect of a span without the key, or under a mapping that names none', () => {
    expect(extractAttempts([internalSpan({ name: 'ledger.charge' })], declaring).attempts).toEqual([]);
    expect(extractAttempts([internalSpan({ key: 'k1', name: 'ledger.charge' })], mapping).attempts).toEqual(
      [],
    );
  });

  it('tells server attempts whether the mapping names side-effect spans', () => {
    const input = serverSpan({ key: 'k1', outcome: 'miss' });
    expect(only<ServerAttempt>([input], declaring).effectSpansDeclared).toBe(true);
    expect(only<ServerAttempt>([input], mapping).effectSpansDeclared).toBe(false);
  });

  it('counts a SERVER side-effect span into node activity', () => {
    const result = extractAttempts(
      [serverSpan({ key: 'k1', name: 'ledger.charge', statusCode: 503, error: true })],
      declaring,
    );
    expect(result.activity.map((a) => [a.spans, a.errors])).toEqual([[1, 1]]);
  });
});
