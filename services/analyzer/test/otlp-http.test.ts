import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { defaultMapping, mappingDecodeOptions } from '@keyscope/attempts';
import { type ErrorDefinition, GrpcCode, KeyscopeError } from '@keyscope/errors';
import { encodeTraces, OTLP_ERRORS, type SpanConsumer, SpanKind } from '@keyscope/otlp';
import { BlockingConsumer, RecordingConsumer, span, tracesJson } from '@keyscope/testkit';
import {
  decodeExportResponse,
  decodeRpcStatus,
  gzipBomb,
  openRawConnection,
  parseResponses,
  type RawConnection,
  rawPost,
} from '@keyscope/testkit/wire';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { type RunningReceivers, startReceivers } from '../src/receivers/start-receivers.ts';

const PROTOBUF = { 'content-type': 'application/x-protobuf' };
const JSON_UTF8 = { 'content-type': 'application/json; charset=utf-8' };

const STORE_BUSY: ErrorDefinition = {
  code: 'KS_TEST_STORE_BUSY',
  httpStatus: 503,
  retryable: true,
  description: 'test',
};
const RATE_LIMITED: ErrorDefinition = {
  code: 'KS_TEST_RATE_LIMITED',
  httpStatus: 429,
  retryable: true,
  description: 'test',
};
const REFUSED: ErrorDefinition = {
  code: 'KS_TEST_REFUSED',
  httpStatus: 400,
  retryable: false,
  description: 'test',
};

const running: RunningReceivers[] = [];
const connections: RawConnection[] = [];
afterEach(async () => {
  for (const connection of connections.splice(0)) connection.socket.destroy();
  await Promise.all(running.splice(0).map((serve) => serve.stop()));
});

async function connectTo(serve: RunningReceivers): Promise<RawConnection> {
  const connection = await openRawConnection(serve.addresses.otlpHttp.port);
  connections.push(connection);
  return connection;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5_000) throw new Error(`still waiting for ${what} after 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function serveWith(consumer: SpanConsumer, overrides: object = {}) {
  const base = resolveServeConfig({
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    shutdown: { drainTimeoutMillis: 1_000 },
  });
  const serve = await startReceivers(resolveServeConfig(overrides, base), { consumer, logger: silentLogger });
  running.push(serve);
  const origin = `http://127.0.0.1:${serve.addresses.otlpHttp.port}`;
  return { serve, origin, url: `${origin}/v1/traces` };
}

interface Answer {
  status: number;
  headers: Headers;
  body: Uint8Array;
}

async function post(
  url: string,
  body: Uint8Array | string,
  headers: Record<string, string>,
): Promise<Answer> {
  const response = await fetch(url, { method: 'POST', body, headers });
  return {
    status: response.status,
    headers: response.headers,
    body: new Uint8Array(await response.arrayBuffer()),
  };
}

function text(answer: Answer): string {
  return Buffer.from(answer.body).toString('utf8');
}

/** The google.rpc.Status of a failure, decoded by the content type the receiver answered with. */
function statusOf(answer: Answer): { code?: number; message?: string } {
  return answer.headers.get('content-type')?.startsWith('application/json')
    ? JSON.parse(text(answer))
    : decodeRpcStatus(answer.body);
}

const twoSpans = () =>
  encodeTraces([span({ id: 1, key: 'k1' }), span({ id: 2, key: 'k1', parentSpanId: '0000000000000001' })]);

/** After a refusal the receiver must go on serving: a good request still gets 200. */
async function expectStillServing(url: string): Promise<void> {
  const answer = await post(url, encodeTraces([span({ id: 99, key: 'k1' })]), PROTOBUF);
  expect(answer.status).toBe(200);
}

describe('OTLP/HTTP receiver', () => {
  describe('accepts', () => {
    it('protobuf spans, hands them to the consumer and answers an empty ExportTraceServiceResponse', async () => {
      const consumer = new RecordingConsumer();
      const { url } = await serveWith(consumer);
      const answer = await post(url, twoSpans(), PROTOBUF);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('application/x-protobuf');
      expect(decodeExportResponse(answer.body).partialSuccess).toBeUndefined();
      expect(consumer.spans().map((s) => s.spanId)).toEqual(['0000000000000001', '0000000000000002']);
      expect(consumer.spans()[1]?.parentSpanId).toBe('0000000000000001');
    });

    it('gzip-compressed protobuf', async () => {
      const consumer = new RecordingConsumer();
      const { url } = await serveWith(consumer);
      const answer = await post(url, gzipSync(twoSpans()), { ...PROTOBUF, 'content-encoding': 'gzip' });
      expect(answer.status).toBe(200);
      expect(consumer.spans()).toHaveLength(2);
    });

    it('JSON with a charset and answers in JSON', async () => {
      const consumer = new RecordingConsumer();
      const { url } = await serveWith(consumer);
      const answer = await post(url, tracesJson([1, 2, 3]), JSON_UTF8);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(JSON.parse(text(answer)).partialSuccess).toBeUndefined();
      expect(consumer.spans().map((s) => s.attributes['idempotency.key'])).toEqual(['k1', 'k2', 'k3']);
    });

    it('gzip-compressed JSON', async () => {
      const consumer = new RecordingConsumer();
      const { url } = await serveWith(consumer);
      const answer = await post(url, gzipSync(tracesJson([1])), {
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      });
      expect(answer.status).toBe(200);
      expect(consumer.spans()).toHaveLength(1);
    });

    it('an empty request with success, without calling the consumer', async () => {
      const consumer = new RecordingConsumer();
      const { url } = await serveWith(consumer);
      const answer = await post(url, new Uint8Array(), PROTOBUF);
      expect(answer.status).toBe(200);
      expect(consumer.payloads).toHaveLength(0);
    });
  });

  describe('partial success', () => {
    it('reports spans the consumer refused in protobuf', async () => {
      const consumer = new RecordingConsumer();
      consumer.result = { rejectedSpans: 1, errorMessage: 'span 2 has no idempotency key' };
      const { url, serve } = await serveWith(consumer);
      const answer = await post(url, twoSpans(), PROTOBUF);
      expect(answer.status).toBe(200);
      expect(decodeExportResponse(answer.body).partialSuccess).toEqual({
        rejectedSpans: 1,
        errorMessage: 'span 2 has no idempotency key',
      });
      const counts = serve.counters.snapshot().http;
      expect(counts.spansAccepted).toBe(1);
      expect(counts.spansRejected).toEqual({ consumer_refused: 1 });
    });

    it('reports spans the consumer refused in JSON', async () => {
      const consumer = new RecordingConsumer();
      consumer.result = { rejectedSpans: 2, errorMessage: 'no keys' };
      const { url } = await serveWith(consumer);
      const answer = await post(url, tracesJson([1, 2]), JSON_UTF8);
      expect(answer.status).toBe(200);
      const partial = JSON.parse(text(answer)).partialSuccess;
      expect(Number(partial.rejectedSpans)).toBe(2);
      expect(partial.errorMessage).toBe('no keys');
    });
  });

  describe('refuses', () => {
    it.each([
      ['text/plain', 'text/plain'],
      ['a JSON charset other than utf-8', 'application/json; charset=utf-16'],
      ['a malformed content type', 'garbage'],
    ])('%s with 415 and a google.rpc.Status', async (_name, contentType) => {
      const { url, serve } = await serveWith(new RecordingConsumer());
      const answer = await post(url, twoSpans(), { 'content-type': contentType });
      expect(answer.status).toBe(415);
      expect(statusOf(answer).message).toContain('Content-Type');
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ unsupported_media_type: 1 });
      await expectStillServing(url);
    });

    it('a request without a content type with 415', async () => {
      const { url } = await serveWith(new RecordingConsumer());
      const answer = await post(url, twoSpans(), {});
      expect(answer.status).toBe(415);
      await expectStillServing(url);
    });

    it('a content encoding other than gzip with 415', async () => {
      const { url, serve } = await serveWith(new RecordingConsumer());
      const answer = await post(url, twoSpans(), { ...PROTOBUF, 'content-encoding': 'br' });
      expect(answer.status).toBe(415);
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ unsupported_content_encoding: 1 });
      await expectStillServing(url);
    });

    it('a small gzip body that inflates past the body limit with 413', async () => {
      const consumer = new RecordingConsumer();
      const { url, serve } = await serveWith(consumer, { otlp: { http: { bodyLimitBytes: 64 * 1024 } } });
      const bomb = gzipBomb(16);
      expect(bomb.length).toBeLessThan(64 * 1024);
      const answer = await post(url, bomb, { ...PROTOBUF, 'content-encoding': 'gzip' });
      expect(answer.status).toBe(413);
      expect(decodeRpcStatus(answer.body).message).toContain('after decompression');
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ body_too_large: 1 });
      expect(consumer.payloads).toHaveLength(0);
      await expectStillServing(url);
    });

    it('an uncompressed body past the limit with 413', async () => {
      const { url } = await serveWith(new RecordingConsumer(), { otlp: { http: { bodyLimitBytes: 1024 } } });
      const answer = await post(url, new Uint8Array(4096), PROTOBUF);
      expect(answer.status).toBe(413);
      await expectStillServing(url);
    });

    it('an undecodable protobuf payload with 400 and a decodable google.rpc.Status', async () => {
      const { url, serve } = await serveWith(new RecordingConsumer());
      // Field 1 (resource_spans), length-delimited, claiming 100 bytes that are not there.
      const answer = await post(url, Uint8Array.of(0x0a, 0x64, 0x01), PROTOBUF);
      expect(answer.status).toBe(400);
      expect(answer.headers.get('content-type')).toBe('application/x-protobuf');
      const status = decodeRpcStatus(answer.body);
      expect(status.code).toBe(GrpcCode.INVALID_ARGUMENT);
      expect(status.message).not.toBe('');
      const reasons = Object.keys(serve.counters.snapshot().http.payloadsRejected);
      expect(reasons).toHaveLength(1);
      expect(OTLP_ERRORS.map((e) => e.code)).toContain(reasons[0]);
      await expectStillServing(url);
    });

    it('an undecodable JSON payload with 400 and a JSON google.rpc.Status', async () => {
      const { url } = await serveWith(new RecordingConsumer());
      const answer = await post(url, '{"resourceSpans": [', JSON_UTF8);
      expect(answer.status).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      const status = JSON.parse(text(answer));
      expect(status.code).toBe(GrpcCode.INVALID_ARGUMENT);
      expect(typeof status.message).toBe('string');
      await expectStillServing(url);
    });

    it('a corrupt gzip body with 400', async () => {
      const { url, serve } = await serveWith(new RecordingConsumer());
      const answer = await post(url, Buffer.from('not gzip'), { ...PROTOBUF, 'content-encoding': 'gzip' });
      expect(answer.status).toBe(400);
      expect(decodeRpcStatus(answer.body).message).toContain('gzip');
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ bad_compression: 1 });
      await expectStillServing(url);
    });

    it('other paths with 404', async () => {
      const { origin, url } = await serveWith(new RecordingConsumer());
      const answer = await post(`${origin}/v1/metrics`, twoSpans(), PROTOBUF);
      expect(answer.status).toBe(404);
      expect(decodeRpcStatus(answer.body).message).toContain('/v1/metrics');
      await expectStillServing(url);
    });

    it('other methods on /v1/traces with 405 and Allow: POST', async () => {
      const { url } = await serveWith(new RecordingConsumer());
      const response = await fetch(url, { method: 'GET' });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      await response.arrayBuffer();
      await expectStillServing(url);
    });
  });

  describe('under load', () => {
    it('answers 503 with Retry-After while maxInFlightRequests are held, then serves again', async () => {
      const consumer = new BlockingConsumer();
      const { url, serve } = await serveWith(consumer, {
        otlp: { admission: { maxInFlightRequests: 1, retryAfterSeconds: 7 } },
      });
      const held = post(url, twoSpans(), PROTOBUF);
      await consumer.whenHolding(1);
      expect(serve.inFlight()).toEqual({ requests: 1, spans: 2 });

      const refused = await post(url, twoSpans(), PROTOBUF);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('7');
      expect(decodeRpcStatus(refused.body).code).toBe(GrpcCode.UNAVAILABLE);

      consumer.release();
      expect((await held).status).toBe(200);
      expect(serve.inFlight()).toEqual({ requests: 0, spans: 0 });
      const after = post(url, twoSpans(), PROTOBUF);
      await consumer.whenHolding(1);
      consumer.release();
      expect((await after).status).toBe(200);
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ saturated: 1 });
    });

    it('answers 503 when the spans in flight would pass maxInFlightSpans', async () => {
      const consumer = new BlockingConsumer();
      const { url, serve } = await serveWith(consumer, { otlp: { admission: { maxInFlightSpans: 3 } } });
      const held = post(url, twoSpans(), PROTOBUF);
      await consumer.whenHolding(1);
      const refused = await post(url, twoSpans(), PROTOBUF);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(serve.counters.snapshot().http.spansRejected).toEqual({ saturated: 2 });
      consumer.release();
      expect((await held).status).toBe(200);
    });

    it('answers a retryable consumer error with 503 and Retry-After, in JSON for JSON', async () => {
      const consumer = new RecordingConsumer();
      consumer.failWith = new KeyscopeError(STORE_BUSY, 'store is busy');
      const { url, serve } = await serveWith(consumer);
      const answer = await post(url, tracesJson([1]), JSON_UTF8);
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toBe('5');
      expect(JSON.parse(text(answer)).message).toBe('store is busy');
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ KS_TEST_STORE_BUSY: 1 });
    });

    it('answers a retryable consumer error declared 429 with 429', async () => {
      const consumer = new RecordingConsumer();
      consumer.failWith = new KeyscopeError(RATE_LIMITED, 'slow down');
      const { url } = await serveWith(consumer);
      const answer = await post(url, twoSpans(), PROTOBUF);
      expect(answer.status).toBe(429);
      expect(answer.headers.get('retry-after')).toBe('5');
    });
  });

  describe('consumer failures', () => {
    it('answers a permanent consumer error with its status and no Retry-After', async () => {
      const consumer = new RecordingConsumer();
      consumer.failWith = new KeyscopeError(REFUSED, 'refused');
      const { url } = await serveWith(consumer);
      const answer = await post(url, twoSpans(), PROTOBUF);
      expect(answer.status).toBe(400);
      expect(answer.headers.get('retry-after')).toBeNull();
    });

    it('answers an unexpected consumer error with 500 and keeps serving', async () => {
      const consumer = new RecordingConsumer();
      consumer.failWith = new TypeError('bug');
      const { url, serve } = await serveWith(consumer);
      const answer = await post(url, twoSpans(), PROTOBUF);
      expect(answer.status).toBe(500);
      expect(decodeRpcStatus(answer.body).message).not.toContain('bug');
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ internal_error: 1 });
      consumer.failWith = undefined;
      await expectStillServing(url);
    });
  });

  describe('slow senders', () => {
    /** Headers announcing 100,000 bytes, then one byte of body. */
    const slowStart = rawPost('/v1/traces', Buffer.of(0x0a), { contentLength: 100_000 });

    it('takes no admission slot for a body still arriving', async () => {
      const consumer = new RecordingConsumer();
      const { url, serve } = await serveWith(consumer, { otlp: { admission: { maxInFlightRequests: 1 } } });
      (await connectTo(serve)).socket.write(slowStart);
      await until(() => serve.counters.snapshot().http.payloadsReceived === 1, 'the slow request');
      expect(serve.inFlight().requests).toBe(0);
      expect((await post(url, twoSpans(), PROTOBUF)).status).toBe(200);
    });

    it('answers a body that does not arrive within bodyTimeoutMillis with 408 and closes the connection', async () => {
      const { serve } = await serveWith(new RecordingConsumer(), {
        otlp: { http: { bodyTimeoutMillis: 300 } },
      });
      const connection = await connectTo(serve);
      const began = Date.now();
      connection.socket.write(slowStart);
      const [response, ...more] = parseResponses(await connection.closed);
      expect(Date.now() - began).toBeGreaterThanOrEqual(300);
      expect(more).toEqual([]);
      expect(response?.status).toBe(408);
      expect(response?.headers.connection).toBe('close');
      expect(decodeRpcStatus(response!.body)).toMatchObject({ code: GrpcCode.INVALID_ARGUMENT });
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ body_timeout: 1 });
    });

    it('answers headers that do not arrive within headersTimeoutMillis with 408 and closes the connection', async () => {
      const { serve } = await serveWith(new RecordingConsumer(), {
        otlp: { http: { headersTimeoutMillis: 300 } },
      });
      const connection = await connectTo(serve);
      connection.socket.write(slowStart.subarray(0, 30));
      const [response] = parseResponses(await connection.closed);
      expect(response?.status).toBe(408);
      expect(response?.headers['content-type']).toBe('application/x-protobuf');
      expect(decodeRpcStatus(response!.body).message).toContain('300 ms');
      expect(serve.counters.snapshot().http).toMatchObject({
        payloadsReceived: 1,
        payloadsRejected: { headers_timeout: 1 },
      });
    });

    it('accepts a headers timeout longer than node’s default whole-request timeout of 5 minutes', async () => {
      const { url } = await serveWith(new RecordingConsumer(), {
        otlp: { http: { headersTimeoutMillis: 10 * 60_000 } },
      });
      await expectStillServing(url);
    });

    it('closes a connection that sends nothing within headersTimeoutMillis, counting no payload', async () => {
      const { serve } = await serveWith(new RecordingConsumer(), {
        otlp: { http: { headersTimeoutMillis: 300 } },
      });
      const connection = await connectTo(serve);
      expect((await connection.closed).length).toBe(0);
      expect(serve.counters.snapshot().http).toMatchObject({ payloadsReceived: 0, payloadsRejected: {} });
    });

    it('closes an idle keep-alive connection after keepAliveTimeoutMillis', async () => {
      const { serve } = await serveWith(new RecordingConsumer(), {
        otlp: { http: { keepAliveTimeoutMillis: 300 } },
      });
      const connection = await connectTo(serve);
      connection.socket.write(rawPost('/v1/traces', twoSpans()));
      const responses = parseResponses(await connection.closed);
      expect(responses.map((response) => response.status)).toEqual([200]);
    });

    it('closes the connection of a request refused before its body arrived', async () => {
      const { serve } = await serveWith(new RecordingConsumer());
      const connection = await connectTo(serve);
      connection.socket.write(
        rawPost('/v1/traces', Buffer.of(0x0a), { contentType: 'text/plain', contentLength: 100_000 }),
      );
      const [response] = parseResponses(await connection.closed);
      expect(response?.status).toBe(415);
      expect(response?.headers.connection).toBe('close');
    });

    it('handles a pipelined connection one request at a time, so an export on another connection is admitted', async () => {
      const consumer = new BlockingConsumer();
      const { url, serve } = await serveWith(consumer);
      const pipelined = await connectTo(serve);
      const requests = Array.from({ length: 20 }, (_, i) =>
        rawPost('/v1/traces', encodeTraces([span({ id: i + 1, key: 'k1' })])),
      );
      pipelined.socket.write(Buffer.concat(requests));
      await until(() => serve.counters.snapshot().http.payloadsReceived === 20, 'the pipelined requests');
      await consumer.whenHolding(1);

      const concurrent = post(url, encodeTraces([span({ id: 99, key: 'k1' })]), PROTOBUF);
      await consumer.whenHolding(2);
      expect(serve.inFlight().requests).toBe(2);
      consumer.release();
      expect((await concurrent).status).toBe(200);

      for (let answered = 1; answered < 20; answered += 1) {
        await consumer.whenHolding(1);
        expect(serve.inFlight().requests).toBe(1);
        consumer.release();
      }
      await until(() => parseResponses(pipelined.received()).length === 20, 'the pipelined answers');
      expect(parseResponses(pipelined.received()).map((response) => response.status)).toEqual(
        Array(20).fill(200),
      );
      expect(consumer.received.map((spans) => spans[0]?.spanId)).toEqual([
        span({ id: 1 }).spanId,
        span({ id: 99 }).spanId,
        ...requests.slice(1).map((_, i) => span({ id: i + 2 }).spanId),
      ]);
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({});
    });

    it('answers 503 with Retry-After when bodies still arriving fill maxBufferedBodyBytes', async () => {
      const { url, serve } = await serveWith(new RecordingConsumer(), {
        otlp: { http: { maxBufferedBodyBytes: 1024 } },
      });
      const slow = await connectTo(serve);
      slow.socket.write(rawPost('/v1/traces', Buffer.alloc(1000, 0x0a), { contentLength: 100_000 }));
      await until(() => serve.counters.snapshot().http.payloadsReceived === 1, 'the slow request');
      // Its thousand bytes are buffered once the receiver has read them.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const refused = await post(url, twoSpans(), PROTOBUF);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ saturated: 1 });
      slow.socket.destroy();
      await until(() => serve.counters.snapshot().http.payloadsRejected.request_aborted === 1, 'the abort');
      await expectStillServing(url);
    });
  });

  describe('while stopping', () => {
    function rawRequest(body: Buffer): Buffer {
      const head = [
        'POST /v1/traces HTTP/1.1',
        'host: 127.0.0.1',
        'content-type: application/x-protobuf',
        `content-length: ${body.length}`,
        '',
        '',
      ].join('\r\n');
      return Buffer.concat([Buffer.from(head), body]);
    }

    function rawConnection(port: number) {
      const socket = connect(port, '127.0.0.1');
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      const closed = new Promise<string>((resolve) =>
        socket.on('close', () => resolve(Buffer.concat(received).toString('latin1'))),
      );
      return { socket, closed };
    }

    const statusesIn = (responses: string) =>
      [...responses.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => m[1]);

    it('refuses a request that arrives on an open connection with 503 and Retry-After', async () => {
      const consumer = new BlockingConsumer();
      const { serve } = await serveWith(consumer);
      const request = rawRequest(Buffer.from(encodeTraces([span({ key: 'k1' })])));
      const held = rawConnection(serve.addresses.otlpHttp.port);
      held.socket.write(request);
      await consumer.whenHolding(1);
      // A second connection whose request headers are still arriving when the stop begins.
      const late = rawConnection(serve.addresses.otlpHttp.port);
      late.socket.write(request.subarray(0, 20));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const stopping = serve.stop();
      late.socket.write(request.subarray(20));
      const refused = await late.closed;
      consumer.release();
      await stopping;
      expect(statusesIn(refused)).toEqual(['503']);
      expect(refused.toLowerCase()).toContain('retry-after: 5');
      expect(serve.counters.snapshot().http.payloadsRejected).toEqual({ shutting_down: 1 });
      expect(consumer.received).toHaveLength(1);
    });
  });

  it('counts the spans its decode options leave out, and does not call the consumer for none', async () => {
    const consumer = new RecordingConsumer();
    const decodeOptions = mappingDecodeOptions(defaultMapping());
    const base = resolveServeConfig({ otlp: { http: { port: 0 }, grpc: { port: 0 } } });
    const serve = await startReceivers(base, { consumer, decodeOptions, logger: silentLogger });
    running.push(serve);
    const url = `http://127.0.0.1:${serve.addresses.otlpHttp.port}/v1/traces`;
    const unkeyed = { attributes: {} };
    const mixed = [
      span({ id: 1, kind: SpanKind.CLIENT, ...unkeyed }), // left out
      span({ id: 2, kind: SpanKind.SERVER, ...unkeyed }), // node activity
      span({ id: 3, kind: SpanKind.CLIENT, key: 'k1' }), // keyed
    ];
    expect((await post(url, encodeTraces(mixed), PROTOBUF)).status).toBe(200);
    expect(consumer.spans().map((decoded) => decoded.spanId)).toEqual(['', mixed[2]!.spanId]);
    const clientsOnly = [
      span({ id: 4, kind: SpanKind.CLIENT, ...unkeyed }),
      span({ id: 5, kind: SpanKind.INTERNAL, ...unkeyed }),
    ];
    expect((await post(url, encodeTraces(clientsOnly), PROTOBUF)).status).toBe(200);
    expect(consumer.payloads).toHaveLength(1);
    expect(serve.counters.snapshot().http).toMatchObject({ payloadsAccepted: 2, spansAccepted: 5 });
  });

  it('counts payloads, spans and bytes before and after decompression', async () => {
    const { url, serve } = await serveWith(new RecordingConsumer());
    const body = twoSpans();
    const compressed = gzipSync(body);
    await post(url, compressed, { ...PROTOBUF, 'content-encoding': 'gzip' });
    const counts = serve.counters.snapshot();
    expect(counts.http).toMatchObject({
      payloadsReceived: 1,
      payloadsAccepted: 1,
      spansAccepted: 2,
      bytesReceivedCompressed: compressed.length,
      bytesReceivedDecompressed: body.length,
    });
    expect(counts.grpc.payloadsReceived).toBe(0);
  });
});
