import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import {
  createIdempotencyGate,
  IdempotencyRequestError,
  keyFromHeader,
  placementFromResource,
  type RunResult,
  requestFingerprint,
} from '@keyscope/gate';
import { type Span, SpanKind, trace } from '@opentelemetry/api';
import { declaredScope, openDedupStore } from './dedup-stores.ts';
import { resource, shutdownTelemetry } from './instrumentation.ts';
import { Ledger } from './ledger.ts';
import type { DecisionSpan, StoreScope } from './scenarios.ts';
import { serviceLatencyMillis, sleep } from './service-latency.ts';

/**
 * One payments node of the lab, a process of its own: `POST /payments` charges once per
 * Idempotency-Key, guarded by the gate, whose store is this process's memory (a node store) or,
 * with `LAB_STORE_SCOPE=cluster`, the SQLite file at `LAB_STORE_PATH` every node of the cluster
 * opens, under the one store id `LAB_STORE_ID`; a completed key lives `LAB_TTL_MILLIS`. The gate
 * records its decision on the HTTP instrumentation's SERVER span or, with
 * `LAB_DECISION_SPAN=child`, on an INTERNAL `idempotency.check` span under it that ends as soon
 * as the store has answered. `GET /healthz` answers 200 for a proxy's health checks, naming the
 * node in `x-lab-node`. The work
 * takes a lognormal service time, half before the charge (the card processor's round trip) and
 * half after (the receipt); the charge goes to the ledger, on disk, before the answer, and how the
 * request ended (answered, or its caller gone first) after it. The recorder starts a brownout with
 * an IPC message `{ brownout: { addedMillis, untilUnixMillis } }`: requests that arrive before
 * `untilUnixMillis` wait `addedMillis` more before charging; with `{ stall: { untilUnixMillis } }`,
 * requests that charge before then hang after the charge (the recorder kills the node at the end).
 */
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

const STALL_GRACE_MILLIS = 30_000;

const placement = placementFromResource(resource.attributes as Record<string, string>);
const ledger = new Ledger(requiredEnv('LAB_LEDGER'));
const storeScope = (process.env.LAB_STORE_SCOPE ?? 'node') as StoreScope;
const decisionSpan = (process.env.LAB_DECISION_SPAN ?? 'server') as DecisionSpan;
const storeId = process.env.LAB_STORE_ID;
// The gate verifies the declaration: it refuses to start on one that permits duplicates.
const gate = createIdempotencyGate({
  store: openDedupStore(storeScope, process.env.LAB_STORE_PATH),
  scope: declaredScope(placement, storeScope),
  ...(storeId === undefined || storeId === '' ? {} : { storeId }),
  ttlMillis: Number(requiredEnv('LAB_TTL_MILLIS')),
});
const tracer = trace.getTracer('keyscope-lab-payments');

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
  let callerLeftUnixMillis: number | null = null;
  response.once('close', () => {
    if (!response.writableFinished) callerLeftUnixMillis = Date.now();
  });
  if (request.method === 'GET' && request.url === '/healthz') {
    response.writeHead(200, { 'content-type': 'text/plain', 'x-lab-node': placement.node }).end('ok');
    return;
  }
  if (request.method !== 'POST' || request.url !== '/payments') {
    response.writeHead(404).end();
    return;
  }
  const span = trace.getActiveSpan();
  span?.setAttribute('http.route', '/payments');
  const key = keyFromHeader(request.headers['idempotency-key']);
  const payment = JSON.parse(await text(request)) as { amount: number; card: string };
  const addedMillis = receivedUnixMillis < brownout.untilUnixMillis ? brownout.addedMillis : 0;
  // The check: a child of the SERVER span (the active one), keyed at its start so the sampler keeps it.
  const check: Span | undefined =
    decisionSpan === 'child' && key !== undefined
      ? tracer.startSpan('idempotency.check', {
          kind: SpanKind.INTERNAL,
          attributes: { 'idempotency.key': key, 'http.route': '/payments' },
        })
      : undefined;
  let checked = false;
  const endCheck = () => {
    if (checked) return;
    checked = true;
    check?.end();
  };
  let charged = false;
  let result: RunResult<{ id: string; amount: number }>;
  try {
    result = await gate.run(
      key,
      requestFingerprint('POST', '/payments', payment),
      async () => {
        // Admitted: the decision is made, and the check is over before the work starts.
        endCheck();
        const serviceMillis = serviceLatencyMillis();
        await sleep(serviceMillis / 2 + addedMillis);
        const context = span?.spanContext();
        ledger.append({
          key: key!,
          node: placement.node,
          traceId: context?.traceId ?? '',
          spanId: context?.spanId ?? '',
          decisionSpanId: (check ?? span)?.spanContext().spanId ?? '',
          receivedUnixMillis,
          chargedUnixMillis: Date.now(),
        });
        charged = true;
        // A hung node answers nothing until the kill that ends the stall; the wait is bounded all the same.
        if (Date.now() < stall.untilUnixMillis)
          await sleep(stall.untilUnixMillis - Date.now() + STALL_GRACE_MILLIS);
        await sleep(serviceMillis / 2);
        return { id: `ch_${placement.node}_${key}`, amount: payment.amount };
      },
      check === undefined ? {} : { span: check },
    );
  } finally {
    endCheck();
  }
  const { value, replayed } = result;
  if (charged) recordAnswer(key!, span?.spanContext().spanId ?? '', response, () => callerLeftUnixMillis);
  if (response.destroyed) return;
  response.writeHead(201, {
    'content-type': 'application/json',
    ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
  });
  response.end(JSON.stringify(value));
}

/**
 * Writes how a charged request ended once it is known: its response handed to the connection, or
 * the connection closed first (the caller or the proxy left, and nothing was sent).
 */
function recordAnswer(
  key: string,
  spanId: string,
  response: ServerResponse,
  callerLeft: () => number | null,
): void {
  const handlerEndedUnixMillis = Date.now();
  const write = (answeredUnixMillis: number | null) =>
    ledger.answered({
      key,
      spanId,
      handlerEndedUnixMillis,
      answeredUnixMillis,
      callerLeftUnixMillis: answeredUnixMillis === null ? (callerLeft() ?? Date.now()) : null,
    });
  if (response.destroyed) {
    write(null);
    return;
  }
  let written = false;
  response.once('finish', () => {
    if (written) return;
    written = true;
    write(Date.now());
  });
  response.once('close', () => {
    if (written) return;
    written = true;
    write(null);
  });
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
