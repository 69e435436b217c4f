import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import {
  createIdempotencyGate,
  createMemoryDedupStore,
  IdempotencyRequestError,
  keyFromHeader,
  placementFromResource,
  requestFingerprint,
} from '@keyscope/gate';
import { trace } from '@opentelemetry/api';
import { resource, shutdownTelemetry } from './instrumentation.ts';
import { Ledger } from './ledger.ts';
import { serviceLatencyMillis, sleep } from './service-latency.ts';

/**
 * One payments node of the lab, a process of its own: `POST /payments` charges once per
 * Idempotency-Key in this process's memory (a node store, whose TTL is `LAB_TTL_MILLIS`), guarded
 * by the gate on the HTTP instrumentation's SERVER span. The work takes a lognormal service time,
 * half before the charge (the card processor's round trip) and half after (the receipt); the
 * charge goes to the ledger, on disk, before the answer. The recorder starts a brownout with an
 * IPC message `{ brownout: { addedMillis, untilUnixMillis } }`: requests that arrive before
 * `untilUnixMillis` wait `addedMillis` more before charging; with `{ stall: { untilUnixMillis } }`,
 * requests that charge before then hang after the charge (the recorder kills the node at the end).
 */
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

const STALL_GRACE_MILLIS = 30_000;

const placement = placementFromResource(resource.attributes as Record<string, string>);
const ledger = new Ledger(requiredEnv('LAB_LEDGER'));
const gate = createIdempotencyGate({
  store: createMemoryDedupStore(),
  // The team's declaration: retries come back to this node. The lab's proxy breaks it when a node fails.
  scope: { placement, keyScope: 'node', retryScope: { level: 'node' } },
  ttlMillis: Number(requiredEnv('LAB_TTL_MILLIS')),
});

let brownout = { addedMillis: 0, untilUnixMillis: 0 };
let stall = { untilUnixMillis: 0 };
process.on('message', (message: { brownout?: typeof brownout; stall?: typeof stall }) => {
  if (message.brownout !== undefined) brownout = message.brownout;
  if (message.stall !== undefined) stall = message.stall;
});

const server = http.createServer((request, response) => {
  pay(request, response).catch((error: unknown) => {
    const status =
      error instanceof IdempotencyRequestError ? error.httpStatus : error instanceof SyntaxError ? 400 : 500;
    if (response.headersSent || response.destroyed) return;
    response.writeHead(status, { 'content-type': 'application/problem+json' });
    response.end(JSON.stringify({ status, code: (error as { code?: string }).code }));
  });
});

async function pay(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const receivedUnixMillis = Date.now();
  if (request.method !== 'POST' || request.url !== '/payments') {
    response.writeHead(404).end();
    return;
  }
  const span = trace.getActiveSpan();
  span?.setAttribute('http.route', '/payments');
  const payment = JSON.parse(await text(request)) as { amount: number; card: string };
  const addedMillis = receivedUnixMillis < brownout.untilUnixMillis ? brownout.addedMillis : 0;
  const { value, replayed } = await gate.run(
    keyFromHeader(request.headers['idempotency-key']),
    requestFingerprint('POST', '/payments', payment),
    async () => {
      const serviceMillis = serviceLatencyMillis();
      await sleep(serviceMillis / 2 + addedMillis);
      const key = keyFromHeader(request.headers['idempotency-key'])!;
      const context = span?.spanContext();
      ledger.append({
        key,
        node: placement.node,
        traceId: context?.traceId ?? '',
        spanId: context?.spanId ?? '',
        receivedUnixMillis,
        chargedUnixMillis: Date.now(),
      });
      // A hung node answers nothing until the kill that ends the stall; the wait is bounded all the same.
      if (Date.now() < stall.untilUnixMillis)
        await sleep(stall.untilUnixMillis - Date.now() + STALL_GRACE_MILLIS);
      await sleep(serviceMillis / 2);
      return { id: `ch_${placement.node}_${key}`, amount: payment.amount };
    },
  );
  if (response.destroyed) return;
  response.writeHead(201, {
    'content-type': 'application/json',
    ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
  });
  response.end(JSON.stringify(value));
}

async function text(request: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of request.setEncoding('utf8')) body += chunk;
  return body;
}

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} must be set for a payments node`);
  return value;
}

server.listen(Number(requiredEnv('LAB_PORT')), '127.0.0.1', () => process.send?.({ ready: true }));
// A clean stop (the end of a recording) exports what the batch holds; a SIGKILL does not.
process.once('SIGTERM', () => {
  server.close();
  shutdownTelemetry().finally(() => process.exit(0));
});
