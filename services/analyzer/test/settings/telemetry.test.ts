import { createServer, type Server } from 'node:http';
import { isKeyscopeError } from '@keyscope/errors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executedTwice, freePort, startConfigured } from './configured-keyscope.ts';

describe('telemetry.*', () => {
  let collector: Server;
  let collectorPort: number;
  const received: Buffer[] = [];
  beforeAll(async () => {
    collector = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        if (request.url === '/v1/traces') received.push(Buffer.concat(chunks));
        response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    collectorPort = (collector.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => collector.close(() => resolve())));

  it('telemetry.otlpEndpoint: keyscope’s own traces go to the endpoint', async () => {
    const keyscope = await startConfigured({
      env: { KEYSCOPE_TELEMETRY_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}/v1/traces` },
    });
    expect((await keyscope.exportSpans(executedTwice('traced-key'))).status).toBe(200);
    // Stopping flushes the SDK's batch.
    await keyscope.stop();
    expect(received.length).toBeGreaterThan(0);
    expect(Buffer.concat(received).includes('keyscope')).toBe(true);
  });

  it('telemetry.allowSelfIngest: tracing keyscope into its own receiver is refused unless true', async () => {
    const port = await freePort();
    const settings = {
      file: { otlp: { http: { port } }, telemetry: { otlpEndpoint: `http://127.0.0.1:${port}/v1/traces` } },
    };
    const refused = await startConfigured(settings).then(
      async (started) => {
        await started.stop();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(isKeyscopeError(refused) && refused.code).toBe('KS_ANALYZER_CONFIG_INVALID');
    const keyscope = await startConfigured({
      ...settings,
      env: { KEYSCOPE_TELEMETRY_ALLOW_SELF_INGEST: 'true' },
    });
    try {
      expect(keyscope.running.addresses.otlpHttp?.port).toBe(port);
    } finally {
      await keyscope.stop();
    }
  });
});
