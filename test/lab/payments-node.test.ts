import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind } from '@keyscope/otlp';
import { afterEach, describe, expect, it } from 'vitest';
import { exited, freePort, whenReady } from '../support/sdk-process.ts';
import { startCaptureReceiver } from './capture-receiver.ts';
import { children, labProcess, paymentsNodeEnv } from './lab-processes.ts';
import { readLedger } from './ledger.ts';
import { readRecording } from './truth.ts';

const folders: string[] = [];
afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe('a payments node and the checkout client, as processes under the OpenTelemetry Node SDK', () => {
  it('charge once per key into the ledger and export the SERVER span each charge names, under the client’s send', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'keyscope-lab-node-'));
    folders.push(folder);
    const receiver = await startCaptureReceiver();
    try {
      const port = await freePort();
      const ledgerPath = join(folder, 'ledger.jsonl');
      const node = labProcess(
        'payments-node.ts',
        paymentsNodeEnv({ name: 'payments-a', port, ledgerPath, ttlMillis: 60_000, otlpUrl: receiver.url }),
      );
      await whenReady(node, 'payments-a');
      const client = labProcess('checkout-traffic.ts', {
        LAB_OTLP_URL: receiver.url,
        LAB_RESOURCE: JSON.stringify({ 'service.name': 'checkout', 'service.instance.id': 'checkout-1' }),
        LAB_TRAFFIC: JSON.stringify({
          proxyUrl: `http://127.0.0.1:${port}`,
          durationMillis: 1500,
          ratePerSecond: 5,
          timeoutMillis: 15_000,
          maxSends: 2,
          backoffBaseMillis: 100,
        }),
      });
      expect(await exited(client)).toBe(0);
      node.kill('SIGTERM');
      await exited(node);
      const recording = join(folder, 'recording.jsonl.gz');
      receiver.save(recording);

      const ledger = readLedger(ledgerPath);
      const spans = readRecording(recording);
      const byId = new Map(spans.map((span) => [span.spanId, span]));
      expect(ledger.length).toBeGreaterThan(0);
      expect(new Set(ledger.map((row) => row.key)).size).toBe(ledger.length);
      for (const row of ledger) {
        const server = byId.get(row.spanId);
        expect(server?.kind).toBe(SpanKind.SERVER);
        expect(server?.attributes).toMatchObject({
          'idempotency.key': row.key,
          'idempotency.outcome': 'miss',
          'idempotency.store': 'payments/node:payments-a',
          'http.route': '/payments',
          'http.response.status_code': 201,
        });
        expect(server?.resource.attributes['service.instance.id']).toBe('payments-a');
        expect(row.chargedUnixMillis).toBeGreaterThanOrEqual(row.receivedUnixMillis);
        const send = byId.get(server!.parentSpanId);
        expect(send?.kind).toBe(SpanKind.CLIENT);
        expect(send?.attributes).toMatchObject({
          'idempotency.key': row.key,
          'http.request.resend_count': 0,
        });
      }
    } finally {
      await receiver.close();
    }
  }, 120_000);
});
