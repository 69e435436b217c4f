import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ANSWER_MAX_BYTES, ANSWER_READ_MAX_MILLIS, sendRequest } from '../src/send-request.ts';
import { type Answer, type HttpReceiver, startReceiver } from './support/http-receiver.ts';

const OPTIONS = { fetch: globalThis.fetch, timeoutMillis: 2_000, nowUnixMillis: Date.now };

let receiver: HttpReceiver | undefined;

afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

async function answerWith(answer: Answer) {
  receiver = await startReceiver(() => answer);
  return sendRequest(
    { url: receiver.url, headers: { 'content-type': 'application/json' }, body: { a: 1 } },
    OPTIONS,
  );
}

describe('sendRequest', () => {
  it('counts any 2xx as delivered', async () => {
    expect(await answerWith({ status: 202 })).toEqual({ outcome: 'delivered', status: 202 });
    expect(receiver!.requests[0]).toMatchObject({ method: 'POST', body: { a: 1 } });
  });

  it('retries on 5xx, 408, 425 and 429, keeping Retry-After and the start of the body', async () => {
    expect(await answerWith({ status: 503, body: '<html>\n  down for maintenance\n</html>' })).toEqual({
      outcome: 'retry',
      error: 'HTTP 503: <html> down for maintenance </html>',
      retryAfterMillis: null,
    });
    for (const status of [408, 425, 429]) {
      await receiver!.close();
      expect(await answerWith({ status, headers: { 'retry-after': '3' } })).toMatchObject({
        outcome: 'retry',
        retryAfterMillis: 3_000,
      });
    }
  });

  it('abandons on other 4xx, which the sink will refuse again', async () => {
    for (const status of [400, 401, 403, 404, 410, 413]) {
      await receiver?.close();
      expect(await answerWith({ status })).toMatchObject({ outcome: 'abandon', error: `HTTP ${status}` });
    }
  });

  it('does not follow a redirect with the page, and says where it pointed', async () => {
    expect(
      await answerWith({ status: 301, headers: { location: 'https://elsewhere.example/hook' } }),
    ).toEqual({
      outcome: 'abandon',
      error: 'HTTP 301 redirect to https://elsewhere.example/hook; configure the final URL',
    });
    expect(receiver!.requests).toHaveLength(1);
  });

  it('retries when the connection is reset or refused', async () => {
    expect(await answerWith('reset')).toMatchObject({
      outcome: 'retry',
      error: expect.stringMatching(/^network error/),
    });
    const url = receiver!.url;
    await receiver!.close();
    receiver = undefined;
    expect(await sendRequest({ url, headers: {}, body: {} }, OPTIONS)).toMatchObject({
      outcome: 'retry',
      error: expect.stringContaining('ECONNREFUSED'),
    });
  });

  it('ends the exchange when its signal aborts, saying keyscope is stopping', async () => {
    receiver = await startReceiver(() => ({ status: 202, afterMillis: 60_000 }));
    const abort = new AbortController();
    const sending = sendRequest(
      { url: receiver.url, headers: {}, body: {} },
      { ...OPTIONS, timeoutMillis: 60_000, signal: abort.signal },
    );
    for (let i = 0; i < 100 && receiver.requests.length === 0; i++) await sleep(10);
    abort.abort();
    expect(await sending).toEqual({
      outcome: 'retry',
      error: 'aborted before the sink answered: keyscope is stopping',
      retryAfterMillis: null,
    });
  });

  it('gives up on a sink that does not answer within the timeout and retries later', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const started = Date.now();
      const result = await sendRequest(
        { url: `http://127.0.0.1:${port}/`, headers: {}, body: {} },
        { ...OPTIONS, timeoutMillis: 100 },
      );
      expect(result).toEqual({ outcome: 'retry', error: 'no answer within 100 ms', retryAfterMillis: null });
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});

describe('sendRequest against a sink answering with a huge body', () => {
  const GIB = 1024 * 1024 * 1024;
  const CHUNK = 64 * 1024;

  /**
   * A sink that answers `status` with a body of `totalBytes`, made lazily a chunk at a time as the
   * connection drains (`fill` repeated), and counts the bytes it handed to the socket.
   */
  async function startStreamingSink(status: number, totalBytes: number, fill: string) {
    const chunk = Buffer.alloc(CHUNK, fill);
    const sink = { server: undefined as unknown as Server, url: '', producedBytes: 0, closed: false };
    sink.server = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(status, { 'content-type': 'text/plain', 'content-length': String(totalBytes) });
        const body = new Readable({
          read() {
            if (sink.producedBytes >= totalBytes) return void this.push(null);
            sink.producedBytes += CHUNK;
            this.push(chunk);
          },
        });
        response.on('close', () => {
          sink.closed = true;
          body.destroy();
        });
        body.pipe(response);
      });
    });
    await new Promise<void>((resolve) => sink.server.listen(0, '127.0.0.1', resolve));
    sink.url = `http://127.0.0.1:${(sink.server.address() as AddressInfo).port}/hook`;
    return sink;
  }

  async function stop(server: Server) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  it('records a 2xx with a 2 GiB body as delivered without reading the body', async () => {
    const sink = await startStreamingSink(200, 2 * GIB, '0');
    try {
      const rssBefore = process.memoryUsage().rss;
      const started = Date.now();
      const result = await sendRequest({ url: sink.url, headers: {}, body: {} }, OPTIONS);
      expect(result).toEqual({ outcome: 'delivered', status: 200 });
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 * 1024);
      for (let i = 0; i < 100 && !sink.closed; i++) await sleep(10);
      expect(sink.closed).toBe(true);
      expect(sink.producedBytes).toBeLessThan(64 * 1024 * 1024);
    } finally {
      await stop(sink.server);
    }
  });

  it('keeps only the start of a failing 500 with a 2 GiB body as its error', async () => {
    const sink = await startStreamingSink(500, 2 * GIB, 'x');
    try {
      const rssBefore = process.memoryUsage().rss;
      const started = Date.now();
      const result = await sendRequest({ url: sink.url, headers: {}, body: {} }, OPTIONS);
      expect(result).toMatchObject({ outcome: 'retry', error: expect.stringMatching(/^HTTP 500: x+…$/) });
      expect((result as { error: string }).error.length).toBeLessThan(ANSWER_MAX_BYTES);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 * 1024);
      for (let i = 0; i < 100 && !sink.closed; i++) await sleep(10);
      expect(sink.closed).toBe(true);
      expect(sink.producedBytes).toBeLessThan(64 * 1024 * 1024);
    } finally {
      await stop(sink.server);
    }
  });

  it('records a failing answer whose body trickles without end within ANSWER_READ_MAX_MILLIS of its status', async () => {
    const trickling = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(503, { 'content-type': 'text/plain' });
        response.write('overloaded ');
        const drip = setInterval(() => response.write('.'), 20);
        response.on('close', () => clearInterval(drip));
      });
    });
    await new Promise<void>((resolve) => trickling.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = trickling.address() as AddressInfo;
      const started = Date.now();
      const result = await sendRequest(
        { url: `http://127.0.0.1:${port}/`, headers: {}, body: {} },
        { ...OPTIONS, timeoutMillis: 60_000 },
      );
      expect(result).toMatchObject({
        outcome: 'retry',
        error: expect.stringMatching(/^HTTP 503: overloaded \.+$/),
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(ANSWER_READ_MAX_MILLIS - 50);
      expect(Date.now() - started).toBeLessThan(ANSWER_READ_MAX_MILLIS + 1_500);
    } finally {
      await stop(trickling);
    }
  });

  it('ends at the timeout a failing answer whose body trickles without end', async () => {
    const trickling = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(503, { 'content-type': 'text/plain' });
        response.write('overloaded ');
        const drip = setInterval(() => response.write('.'), 20);
        response.on('close', () => clearInterval(drip));
      });
    });
    await new Promise<void>((resolve) => trickling.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = trickling.address() as AddressInfo;
      const started = Date.now();
      const result = await sendRequest(
        { url: `http://127.0.0.1:${port}/`, headers: {}, body: {} },
        { ...OPTIONS, timeoutMillis: 300 },
      );
      expect(result).toMatchObject({
        outcome: 'retry',
        error: expect.stringMatching(/^HTTP 503: overloaded \.*$/),
      });
      expect(Date.now() - started).toBeLessThan(1_500);
    } finally {
      await stop(trickling);
    }
  });
});

function sleep(millis: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, millis));
}
