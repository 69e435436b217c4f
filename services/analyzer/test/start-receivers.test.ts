import { createServer, type Server } from 'node:net';
import { encodeTraces, encodeTracesJson } from '@keyscope/otlp';
import { BlockingConsumer, RecordingConsumer, span } from '@keyscope/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import { type RunningReceivers, startReceivers } from '../src/receivers/start-receivers.ts';

const PROTOBUF = { 'content-type': 'application/x-protobuf' };

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

function testConfig(overrides: object = {}) {
  const base = resolveServeConfig({
    api: { port: 0 },
    otlp: { http: { port: 0 }, grpc: { port: 0 } },
    shutdown: { drainTimeoutMillis: 2_000 },
  });
  return resolveServeConfig(overrides, base);
}

function capturingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (line) => lines.push(line), error: (line) => lines.push(line) };
}

async function started(serve: RunningReceivers): Promise<RunningReceivers> {
  cleanups.push(() => serve.stop());
  return serve;
}

function tracesUrl(serve: RunningReceivers): string {
  return `http://127.0.0.1:${serve.addresses.otlpHttp.port}/v1/traces`;
}

describe('startReceivers', () => {
  it('logs one line per listener with the port it picked', async () => {
    const logger = capturingLogger();
    const serve = await started(
      await startReceivers(testConfig(), { consumer: new RecordingConsumer(), logger }),
    );
    const { otlpHttp, otlpGrpc } = serve.addresses;
    expect(otlpHttp.port).toBeGreaterThan(0);
    expect(otlpGrpc.port).toBeGreaterThan(0);
    expect(logger.lines).toEqual([
      `otlp-http listening on http://127.0.0.1:${otlpHttp.port}`,
      `otlp-grpc listening on 127.0.0.1:${otlpGrpc.port}`,
    ]);
  });

  it('answers the requests in flight before stop resolves', async () => {
    const consumer = new BlockingConsumer();
    const serve = await startReceivers(testConfig(), { consumer, logger: capturingLogger() });
    const inFlight = fetch(tracesUrl(serve), {
      method: 'POST',
      body: encodeTraces([span({ key: 'k1' })]),
      headers: PROTOBUF,
    });
    await consumer.whenHolding(1);
    let stopped = false;
    const began = Date.now();
    const stopping = serve.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);
    consumer.release();
    expect((await inFlight).status).toBe(200);
    await stopping;
    // The keep-alive connection is ended once answered, not left to the 2 s drain timeout.
    expect(Date.now() - began).toBeLessThan(1_500);
    await expect(
      fetch(tracesUrl(serve), {
        method: 'POST',
        body: encodeTraces([span({ key: 'k1' })]),
        headers: PROTOBUF,
      }),
    ).rejects.toThrow();
  });

  it('closes connections still held after drainTimeoutMillis', async () => {
    const consumer = new BlockingConsumer();
    const serve = await startReceivers(testConfig({ shutdown: { drainTimeoutMillis: 100 } }), {
      consumer,
      logger: capturingLogger(),
    });
    const inFlight = fetch(tracesUrl(serve), {
      method: 'POST',
      body: encodeTraces([span({ key: 'k1' })]),
      headers: PROTOBUF,
    });
    await consumer.whenHolding(1);
    const began = Date.now();
    await serve.stop();
    expect(Date.now() - began).toBeLessThan(2_000);
    await expect(inFlight).rejects.toThrow();
    consumer.release();
  });

  it('hands both decoders the decode options it is given', async () => {
    const consumer = new RecordingConsumer();
    const serve = await started(
      await startReceivers(testConfig(), {
        consumer,
        logger: capturingLogger(),
        decodeOptions: { spanAttributes: new Set(['idempotency.key']), events: false },
      }),
    );
    const withExtras = span({
      attributes: { 'idempotency.key': 'k1', 'http.route': '/payments' },
      events: [{ name: 'retry', timeUnixMillis: 1_767_225_600_100, attributes: {} }],
    });
    const bodies: [string, Uint8Array | string][] = [
      ['application/json', JSON.stringify(encodeTracesJson([withExtras]))],
      ['application/x-protobuf', encodeTraces([withExtras])],
    ];
    for (const [contentType, body] of bodies) {
      const response = await fetch(tracesUrl(serve), {
        method: 'POST',
        body,
        headers: { 'content-type': contentType },
      });
      expect(response.status).toBe(200);
    }
    expect(consumer.spans()).toHaveLength(2);
    for (const received of consumer.spans()) {
      expect({ ...received.attributes }).toEqual({ 'idempotency.key': 'k1' });
      expect(received.events).toEqual([]);
    }
  });

  it('names the listener whose port is taken and leaves nothing listening', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => blocker.close(resolve)));
    const taken = (blocker.address() as { port: number }).port;
    await expect(
      startReceivers(testConfig({ otlp: { grpc: { port: taken } } }), {
        consumer: new RecordingConsumer(),
        logger: capturingLogger(),
      }),
    ).rejects.toThrow(`otlp-grpc cannot listen on 127.0.0.1:${taken}`);
  });
});
