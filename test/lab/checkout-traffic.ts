import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { sendsOfKey, shutdownTelemetry } from './instrumentation.ts';
import { sleep } from './service-latency.ts';

/**
 * The lab's checkout service, a process of its own: pays at `ratePerSecond` (Poisson arrivals, an
 * open loop) for `durationMillis` through the proxy, one new Idempotency-Key per payment and the
 * same key on every send. A send that times out, fails to connect, or gets a 409 or a 5xx is
 * retried after an exponential backoff with full jitter, up to `maxSends` sends. Then it waits for
 * the payments under way, flushes its spans and exits, printing its counts as one JSON line; with
 * `LAB_CLIENT_LOG`, it writes every send there first, one JSON line each (`ClientSend`).
 */
export interface TrafficPlan {
  readonly proxyUrl: string;
  readonly durationMillis: number;
  readonly ratePerSecond: number;
  readonly timeoutMillis: number;
  readonly maxSends: number;
  readonly backoffBaseMillis: number;
}

/** One send as the client saw it. */
export interface ClientSend {
  readonly key: string;
  /** 0 for the first send of the key. */
  readonly send: number;
  readonly startUnixMillis: number;
  /** When the response ended, the timeout fired, or the error came. */
  readonly endUnixMillis: number;
  /** The HTTP status, `timeout` (the client gave up), or `error` (no response: see `errorCode`). */
  readonly result: number | 'timeout' | 'error';
  /** The error's code (`ECONNRESET`, `ECONNREFUSED`…), or its message when it has none. */
  readonly errorCode?: string;
}

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');
const plan = JSON.parse(process.env.LAB_TRAFFIC ?? '') as TrafficPlan;
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const counts = { payments: 0, sends: 0, byStatus: {} as Record<string, number> };

/** One send: its status, or `timeout` / `error` when none came. */
function send(key: string, index: number, body: string): Promise<ClientSend> {
  const startUnixMillis = Date.now();
  return new Promise((resolve) => {
    let done = false;
    const end = (result: ClientSend['result'], errorCode?: string) => {
      if (done) return;
      done = true;
      resolve({
        key,
        send: index,
        startUnixMillis,
        endUnixMillis: Date.now(),
        result,
        ...(errorCode === undefined ? {} : { errorCode }),
      });
    };
    const codeOf = (error: Error) => (error as NodeJS.ErrnoException).code ?? error.message;
    const url = new URL('/payments', plan.proxyUrl);
    const request = http.request(url, {
      method: 'POST',
      agent,
      // In the options, where the instrumentation's start hook reads the key.
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      timeout: plan.timeoutMillis,
    });
    request.on('timeout', () => {
      end('timeout');
      request.destroy(new Error('timeout'));
    });
    request.on('error', (error) => end('error', codeOf(error)));
    request.on('response', (response) => {
      response.resume();
      response.on('end', () => end(response.statusCode ?? 0));
      response.on('error', (error) => end('error', codeOf(error)));
    });
    request.end(body);
  });
}

function retryable(result: ClientSend['result']): boolean {
  return result === 'timeout' || result === 'error' || result === 409 || result >= 500;
}

const sends: ClientSend[] = [];

async function pay(): Promise<void> {
  const key = randomUUID();
  const body = JSON.stringify({ amount: 1000 + Math.floor(Math.random() * 9000), card: 'tok_lab' });
  counts.payments++;
  for (let sent = 0; sent < plan.maxSends; sent++) {
    if (sent > 0) await sleep(Math.random() * plan.backoffBaseMillis * 2 ** sent);
    const outcome = await send(key, sent, body);
    sends.push(outcome);
    counts.sends++;
    counts.byStatus[outcome.result] = (counts.byStatus[outcome.result] ?? 0) + 1;
    if (!retryable(outcome.result)) break;
  }
  sendsOfKey.delete(key);
}

// Arrival times follow from the plan alone: a loop woken late by a busy machine starts the payments
// it owes at once, so the rate holds whatever the load (an open loop).
const under: Promise<void>[] = [];
// The recorder times its failures from this moment: the traffic's start, however long startup took.
process.send?.({ ready: true });
let arrivalUnixMillis = Date.now();
const endUnixMillis = arrivalUnixMillis + plan.durationMillis;
while (arrivalUnixMillis < endUnixMillis) {
  await sleep(arrivalUnixMillis - Date.now());
  under.push(pay());
  arrivalUnixMillis += -Math.log(1 - Math.random()) * (1000 / plan.ratePerSecond);
}
await Promise.all(under);
agent.destroy();
await shutdownTelemetry();
const log = process.env.LAB_CLIENT_LOG;
if (log !== undefined && log !== '')
  writeFileSync(log, sends.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
process.stdout.write(`${JSON.stringify(counts)}\n`);
