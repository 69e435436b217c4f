import { openRawConnection } from '@keyscope/testkit/wire';
import { describe, expect, it } from 'vitest';
import { startConfigured } from './configured-keyscope.ts';

describe('shutdown.*', () => {
  it('shutdown.drainTimeoutMillis: a request still in flight is cut off after the drain timeout', async () => {
    const keyscope = await startConfigured({ env: { KEYSCOPE_SHUTDOWN_DRAIN_TIMEOUT_MILLIS: '300' } });
    const connection = await openRawConnection(keyscope.running.addresses.otlpHttp!.port);
    // Headers and part of the body: in flight until the body timeout (10 s by default) or the drain.
    connection.socket.write(
      'POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-protobuf\r\ncontent-length: 1000\r\n\r\n0123456789',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    await keyscope.stop();
    const tookMillis = Date.now() - started;
    await Promise.race([connection.closed, new Promise((resolve) => setTimeout(resolve, 1_000))]);
    expect(connection.isClosed()).toBe(true);
    expect(tookMillis).toBeGreaterThanOrEqual(250);
    expect(tookMillis).toBeLessThan(5_000);
  });
});
