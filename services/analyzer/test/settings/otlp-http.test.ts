import { request } from 'node:http';
import { encodeTraces } from '@keyscope/otlp';
import { openRawConnection, parseResponses, type RawConnection } from '@keyscope/testkit/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, executedTwice, freePort, startConfigured } from './configured-keyscope.ts';

/** The headers of an OTLP/protobuf POST of `contentLength` bytes. */
function head(contentLength: number): string {
  return `POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-protobuf\r\ncontent-length: ${contentLength}\r\n\r\n`;
}

/** Milliseconds until the server closes `connection`, and what it answered. */
async function closedAfter(
  connection: RawConnection,
): Promise<{ millis: number; status: number | undefined }> {
  const started = Date.now();
  const bytes = await Promise.race([
    connection.closed,
    new Promise<Buffer>((resolve) => setTimeout(() => resolve(Buffer.alloc(0)), 5_000)),
  ]);
  return { millis: Date.now() - started, status: parseResponses(bytes)[0]?.status };
}

function post(host: string, port: number, body: Uint8Array): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port,
        method: 'POST',
        path: '/v1/traces',
        headers: { 'content-type': 'application/x-protobuf' },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('otlp.http.* body bounds, from a config file', () => {
  let keyscope: ConfiguredKeyscope;
  let port: number;
  beforeAll(async () => {
    keyscope = await startConfigured({
      file: { otlp: { http: { bodyLimitBytes: 1000, maxBufferedBodyBytes: 1500 } } },
    });
    port = keyscope.running.addresses.otlpHttp!.port;
  });
  afterAll(() => keyscope.stop());

  it('otlp.http.bodyLimitBytes: a 2000-byte body is refused with 413 when it is 1000', async () => {
    // The default (20 MiB) takes it, and it decodes: the spans of one key.
    const body = encodeTraces(executedTwice('a-key-with-a-long-name-'.repeat(40)));
    expect(body.length).toBeGreaterThan(1000);
    expect(await post('127.0.0.1', port, body)).toBe(413);
  });

  it('otlp.http.maxBufferedBodyBytes: a body arriving past 1500 bytes buffered is refused with 503', async () => {
    const first = await openRawConnection(port);
    first.socket.write(`${head(900)}${'x'.repeat(800)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = await openRawConnection(port);
    second.socket.write(`${head(900)}${'x'.repeat(800)}`);
    const refused = await closedAfter(second);
    expect(refused.status).toBe(503);
    first.socket.destroy();
  });
});

describe('otlp.http.* timeouts, from KEYSCOPE_* variables', () => {
  let keyscope: ConfiguredKeyscope;
  let port: number;
  beforeAll(async () => {
    keyscope = await startConfigured({
      env: {
        KEYSCOPE_OTLP_HTTP_HEADERS_TIMEOUT_MILLIS: '400',
        KEYSCOPE_OTLP_HTTP_BODY_TIMEOUT_MILLIS: '400',
        KEYSCOPE_OTLP_HTTP_KEEP_ALIVE_TIMEOUT_MILLIS: '400',
      },
    });
    port = keyscope.running.addresses.otlpHttp!.port;
  });
  afterAll(() => keyscope.stop());

  // The defaults are 10 s, 10 s and 65 s: each connection below would stay open past the test.
  it('otlp.http.headersTimeoutMillis: a request whose headers stop is answered 408 and closed', async () => {
    const connection = await openRawConnection(port);
    connection.socket.write('POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1\r\n');
    const closed = await closedAfter(connection);
    expect(closed.status).toBe(408);
    expect(closed.millis).toBeLessThan(3_000);
  });

  it('otlp.http.bodyTimeoutMillis: a request whose body stops is answered 408 and closed', async () => {
    const connection = await openRawConnection(port);
    connection.socket.write(`${head(1000)}0123456789`);
    const closed = await closedAfter(connection);
    expect(closed.status).toBe(408);
    expect(closed.millis).toBeLessThan(3_000);
  });

  it('otlp.http.keepAliveTimeoutMillis: an idle keep-alive connection is closed', async () => {
    const connection = await openRawConnection(port);
    const body = Buffer.from(encodeTraces(executedTwice('keep-alive-key')));
    connection.socket.write(Buffer.concat([Buffer.from(head(body.length)), body]));
    const closed = await closedAfter(connection);
    expect(closed.status).toBe(200);
    expect(closed.millis).toBeLessThan(3_000);
  });
});

describe('otlp.http.* listener, from a variable and a flag', () => {
  const host = '127.0.0.2';
  let keyscope: ConfiguredKeyscope;
  let port: number;
  beforeAll(async () => {
    port = await freePort(host);
    keyscope = await startConfigured({
      env: { KEYSCOPE_OTLP_HTTP_HOST: host },
      flags: ['--otlp-http-port', String(port)],
    });
  });
  afterAll(() => keyscope.stop());

  it('otlp.http.host: the receiver listens on the configured address and on no other', async () => {
    expect(await post(host, port, encodeTraces(executedTwice('host-key')))).toBe(200);
    await expect(post('127.0.0.1', port, encodeTraces(executedTwice('elsewhere')))).rejects.toThrow(
      /ECONNREFUSED/,
    );
  });

  it('otlp.http.port: the receiver answers on the configured port', async () => {
    expect(keyscope.running.addresses.otlpHttp?.port).toBe(port);
    expect((await keyscope.exportSpans(executedTwice('port-key'))).status).toBe(200);
  });
});
