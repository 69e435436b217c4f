import { connect } from 'node:net';
import { declaredErrors } from '@keyscope/errors';
import { server } from '@keyscope/testkit';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { API_ERRORS } from '../../src/api/api-errors.ts';
import { API_CONNECTION_TIMEOUTS } from '../../src/api/api-server.ts';
import { createServedStore, type ServedStore } from './served-store.ts';

let served: ServedStore;
let app: FastifyInstance;

beforeEach(() => {
  served = createServedStore();
  app = served.api();
});

afterEach(async () => {
  await app.close();
  served.close();
});

/** The body is keyscope's error shape with a code the API declares; returns it. */
function expectRefusal(response: { statusCode: number; json(): unknown }, status: number, code: string) {
  expect(response.statusCode).toBe(status);
  const body = response.json() as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message']);
  expect(body.error.code).toBe(code);
  expect(API_ERRORS.map((definition) => definition.code)).toContain(code);
  expect(declaredErrors().find((definition) => definition.code === code)?.httpStatus).toBe(status);
  return body.error;
}

function duplicateOf(key: string) {
  return [server({ key, node: 'a', store: 'A', at: 0 }), server({ key, node: 'b', store: 'B', at: 2 })];
}

describe('key lookups', () => {
  it('find a 300-character key with its attempts', async () => {
    const key = `order-${'x'.repeat(294)}`;
    served.ingest(duplicateOf(key));
    const response = await app.inject(`/api/v1/keys/${key}`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ key, executions: 2, ranTwice: true });
    expect(response.json().attempts).toHaveLength(2);
  });

  it('find a key of 1 KiB of multi-byte characters, percent-encoded, and one with a slash', async () => {
    const long = 'ключ'.repeat(128); // 512 characters, 1024 bytes of UTF-8
    const slashed = 'tenant/order/42';
    served.ingest([...duplicateOf(long), ...duplicateOf(slashed)]);
    for (const key of [long, slashed]) {
      const response = await app.inject(`/api/v1/keys/${encodeURIComponent(key)}`);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ key, executions: 2 });
    }
  });

  it('answer 414 in keyscope’s shape for a key longer than 4096 characters', async () => {
    const error = expectRefusal(
      await app.inject(`/api/v1/keys/${'k'.repeat(4097)}`),
      414,
      'KS_API_URI_TOO_LONG',
    );
    expect(error.message.length).toBeLessThan(200);
  });

  it('answer 400 in keyscope’s shape for a key that is not valid percent-encoding', async () => {
    expectRefusal(await app.inject('/api/v1/keys/%E0%A4%A'), 400, 'KS_API_BAD_REQUEST');
  });
});

describe('refusals in keyscope’s shape', () => {
  it('answers 405 with Allow for a known path and the wrong method', async () => {
    const deleted = await app.inject({
      method: 'DELETE',
      url: '/api/v1/incidents',
      headers: { 'x-keyscope-client': 'test' },
    });
    expectRefusal(deleted, 405, 'KS_API_METHOD_NOT_ALLOWED');
    expect(deleted.headers.allow).toBe('GET, HEAD');
    const fetched = await app.inject({ method: 'GET', url: '/api/v1/incidents/inc_1/ack' });
    expectRefusal(fetched, 405, 'KS_API_METHOD_NOT_ALLOWED');
    expect(fetched.headers.allow).toBe('POST');
  });

  it('answers 404 for a path that is no route', async () => {
    const response = await app.inject('/api/v2/nothing');
    expectRefusal(response, 404, 'KS_API_NOT_FOUND');
    expect(response.headers.allow).toBeUndefined();
  });

  it('does not send a 5 KB cursor back whole', async () => {
    const cursor = 'c'.repeat(5000);
    const response = await app.inject(`/api/v1/findings?cursor=${cursor}`);
    const error = expectRefusal(response, 400, 'KS_API_BAD_PARAMETER');
    expect(response.body).not.toContain(cursor.slice(0, 101));
    expect(error.message.length).toBeLessThan(200);
  });

  it('quotes at most 100 characters of a path it does not know', async () => {
    const path = `/api/v1/${'p'.repeat(5000)}`;
    const error = expectRefusal(await app.inject(path), 404, 'KS_API_NOT_FOUND');
    expect(error.message).toContain('…');
    expect(error.message.length).toBeLessThan(200);
  });

  it('quotes at most 100 characters of an incident id', async () => {
    const error = expectRefusal(
      await app.inject(`/api/v1/incidents/${'i'.repeat(200)}`),
      404,
      'KS_API_NOT_FOUND',
    );
    expect(error.message).not.toContain('i'.repeat(101));
  });

  it('answers 400 for a body that is not JSON although it says so', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/incidents/inc_1/ack',
      headers: { 'content-type': 'application/json' },
      payload: '{"not json',
    });
    expectRefusal(response, 400, 'KS_API_BAD_REQUEST');
  });

  it('answers 413 for a body larger than the API reads', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/incidents/inc_1/ack',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ padding: 'x'.repeat(100_000) }),
    });
    expectRefusal(response, 413, 'KS_API_BODY_TOO_LARGE');
  });

  it('answers 415 for a body of a type it does not read', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/incidents/inc_1/ack',
      headers: { 'content-type': 'application/xml', 'x-keyscope-client': 'test' },
      payload: '<ack/>',
    });
    expectRefusal(response, 415, 'KS_API_UNSUPPORTED_MEDIA_TYPE');
  });

  it('answers a request that is not HTTP over a real socket in keyscope’s shape', async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let received = '';
      socket.on('data', (chunk) => {
        received += chunk.toString('utf8');
      });
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    expect(body.error.code).toBe('KS_API_BAD_REQUEST');
  });
});

describe('slow clients', () => {
  /** Sends `bytes` on a fresh connection and resolves with everything received until it closes. */
  async function idleConnection(port: number, bytes: string): Promise<{ received: string; millis: number }> {
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
      let received = '';
      socket.on('data', (chunk) => {
        received += chunk.toString('utf8');
      });
      socket.on('close', () => resolve({ received, millis: Date.now() - started }));
      socket.on('error', reject);
    });
  }

  it('close a connection whose headers never finish, with 408 in keyscope’s shape', async () => {
    const slow = served.api([], { timeouts: { headersMillis: 300, requestMillis: 2_000 } });
    try {
      await slow.listen({ host: '127.0.0.1', port: 0 });
      const { port } = slow.server.address() as { port: number };
      const { received, millis } = await idleConnection(port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      expect(millis).toBeLessThan(5_000);
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
      expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)).error.code).toBe(
        'KS_API_REQUEST_TIMEOUT',
      );
    } finally {
      await slow.close();
    }
  });

  it('close a request whose body never finishes arriving', async () => {
    const slow = served.api([], { timeouts: { headersMillis: 300, requestMillis: 600 } });
    try {
      await slow.listen({ host: '127.0.0.1', port: 0 });
      const { port } = slow.server.address() as { port: number };
      const { received, millis } = await idleConnection(
        port,
        'POST /api/v1/incidents/inc_x/ack HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{',
      );
      expect(millis).toBeLessThan(5_000);
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      await slow.close();
    }
  });

  it('apply its default timeouts when none are given', () => {
    expect(app.server.headersTimeout).toBe(API_CONNECTION_TIMEOUTS.headersMillis);
    expect(app.server.requestTimeout).toBe(API_CONNECTION_TIMEOUTS.requestMillis);
    expect(app.server.keepAliveTimeout).toBe(API_CONNECTION_TIMEOUTS.keepAliveMillis);
  });
});
