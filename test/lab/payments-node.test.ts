import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind } from '@keyscope/otlp';
import { afterEach, describe, expect, it } from 'vitest';
import { exited, freePort, whenReady } from '../support/sdk-process.ts';
import { startCaptureReceiver } from './capture-receiver.ts';
import { children, labProcess, paymentsNodeEnv } from './lab-processes.ts';
import { readAnswers, readLedger } from './ledger.ts';
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

  it('share one SQLite store between two nodes of a cluster, decide on an idempotency.check child span, and log each answer', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'keyscope-lab-cluster-'));
    folders.push(folder);
    const receiver = await startCaptureReceiver();
    try {
      const nodes = await Promise.all(
        ['payments-a', 'payments-b'].map(async (name) => {
          const port = await freePort();
          const ledgerPath = join(folder, `ledger-${name}.jsonl`);
          const process = labProcess(
            'payments-node.ts',
            paymentsNodeEnv({
              name,
              port,
              ledgerPath,
              ttlMillis: 60_000,
              otlpUrl: receiver.url,
              storeScope: 'cluster',
              storePath: join(folder, 'dedup-store.sqlite'),
              storeId: 'payments/cluster:lab',
              decisionSpan: 'child',
            }),
          );
          await whenReady(process, name);
          return { name, port, ledgerPath, process };
        }),
      );
      const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]];
      const pay = (port: number) =>
        fetch(`http://127.0.0.1:${port}/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': 'lab-key-1' },
          body: JSON.stringify({ amount: 1200, card: 'tok_lab' }),
        });
      const first = await pay(a.port);
      expect(first.status).toBe(201);
      const retry = await pay(b.port);
      expect(retry.status).toBe(201);
      // The retry reached the other node, whose store is the same: a replay, not a second charge.
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(await retry.json()).toEqual(await first.json());
      for (const node of nodes)
        expect((await fetch(`http://127.0.0.1:${node.port}/healthz`)).status).toBe(200);
      for (const node of nodes) node.process.kill('SIGTERM');
      await Promise.all(nodes.map((node) => exited(node.process)));
      const recording = join(folder, 'recording.jsonl.gz');
      receiver.save(recording);

      expect(readLedger(b.ledgerPath)).toEqual([]);
      const [charge] = readLedger(a.ledgerPath);
      expect(charge).toMatchObject({ key: 'lab-key-1', node: 'payments-a' });
      const [answer] = readAnswers(a.ledgerPath);
      expect(answer).toMatchObject({ key: 'lab-key-1', spanId: charge!.spanId, callerLeftUnixMillis: null });
      expect(answer!.answeredUnixMillis).toBeGreaterThanOrEqual(charge!.chargedUnixMillis);

      const spans = readRecording(recording);
      const servers = spans.filter((span) => span.kind === SpanKind.SERVER);
      expect(servers.map((span) => span.resource.attributes['service.instance.id']).sort()).toEqual([
        'payments-a',
        'payments-b',
      ]);
      for (const server of servers) {
        expect(server.attributes).toMatchObject({
          'idempotency.key': 'lab-key-1',
          'http.route': '/payments',
        });
        expect(server.attributes['idempotency.outcome']).toBeUndefined();
      }
      const checks = spans.filter((span) => span.name === 'idempotency.check');
      const outcomes = Object.fromEntries(
        checks.map((check) => [check.resource.attributes['service.instance.id'], check.attributes]),
      );
      expect(outcomes).toMatchObject({
        'payments-a': { 'idempotency.outcome': 'miss', 'idempotency.store': 'payments/cluster:lab' },
        'payments-b': { 'idempotency.outcome': 'hit', 'idempotency.store': 'payments/cluster:lab' },
      });
      for (const check of checks) {
        expect(check.kind).toBe(SpanKind.INTERNAL);
        expect(check.attributes['idempotency.scope']).toBe('cluster');
        const server = servers.find((span) => span.spanId === check.parentSpanId);
        expect(server?.resource.attributes['service.instance.id']).toBe(
          check.resource.attributes['service.instance.id'],
        );
        // Over when the store answered, long before the SERVER span of the work.
        expect(check.endTimeUnixMillis).toBeLessThan(server!.endTimeUnixMillis);
      }
      expect(charge!.decisionSpanId).toBe(
        checks.find((check) => check.attributes['idempotency.outcome'] === 'miss')!.spanId,
      );
    } finally {
      await receiver.close();
    }
  }, 120_000);
});
