import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTraces, type Span } from '@keyscope/otlp';
import { RecordingConsumer, span } from '@keyscope/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveServeConfig } from '../src/config.ts';
import { silentLogger } from '../src/logger.ts';
import { type RunningReceivers, startReceivers } from '../src/receivers/start-receivers.ts';
import { type RunningService, startServe } from '../src/serve.ts';

const dir = mkdtempSync(join(tmpdir(), 'keyscope-telemetry-'));
const ports = { api: { port: 0 }, otlp: { http: { port: 0 }, grpc: { port: 0 } } };
const running: { stop(): Promise<void> }[] = [];
afterAll(async () => {
  for (const service of running.reverse()) await service.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('keyscope tracing itself', () => {
  it('sends its own spans to the configured endpoint, never to its own receivers', async () => {
    // A second keyscope's receivers stand in for the user's collector.
    const collected = new RecordingConsumer();
    const collector: RunningReceivers = await startReceivers(resolveServeConfig(ports), {
      consumer: collected,
      logger: silentLogger,
    });
    running.push(collector);
    const service: RunningService = await startServe(
      resolveServeConfig({
        ...ports,
        db: { path: join(dir, 'k.db') },
        telemetry: { otlpEndpoint: `http://127.0.0.1:${collector.addresses.otlpHttp.port}/v1/traces` },
      }),
      { logger: silentLogger },
    );
    running.push(service);
    const response = await fetch(`http://127.0.0.1:${service.addresses.otlpHttp.port}/v1/traces`, {
      method: 'POST',
      body: encodeTraces([span({ key: 'k1' })]),
      headers: { 'content-type': 'application/x-protobuf' },
    });
    expect(response.status).toBe(200);
    await service.stop(); // flushes the SDK's batch
    const names = collected.payloads.flat().map((s: Span) => s.name);
    expect(names).toContain('keyscope.consume');
    const consume = collected.payloads.flat().find((s: Span) => s.name === 'keyscope.consume')!;
    expect(consume.resource.attributes['service.name']).toBe('keyscope');
    expect(consume.attributes['keyscope.spans']).toBe(1);
  });

  it('refuses to start when the endpoint is its own receiver, unless allowed', async () => {
    const config = resolveServeConfig({
      api: { port: 0 },
      otlp: { http: { port: 4999 }, grpc: { port: 0 } },
      db: { path: join(dir, 'self.db') },
      telemetry: { otlpEndpoint: 'http://127.0.0.1:4999/v1/traces' },
    });
    await expect(startServe(config, { logger: silentLogger })).rejects.toMatchObject({
      code: 'KS_ANALYZER_CONFIG_INVALID',
    });
  });
});
