import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { sendsOfKey, shutdownTelemetry } from './instrumentation.ts';
import { sleep } from './service-latency.ts';

/**
 * The lab's checkout service, a process of its own: pays at `ratePerSecond` (Poisson arrivals, an
 * open loop) for `durationMillis` through the proxy, one new Idempotency-Key per payment and the
 * same key on every send. A send that times out, fails to connect, or gets a 409 or a 5xx is
 * retried after an exponential backoff with full jitter, up to `maxSends` sends. Then it waits for
 * the payments under way, flushes its spans and exits, printing its counts as one JSON line.
 */
export interface TrafficPlan {
  readonly proxyUrl: string;
  readonly durationMillis: number;
  readonly ratePerSecond: number;
  readonly timeoutMillis: number;
  readonly maxSends: number;
  readonly backoffBaseMillis: number;
}

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');
const plan = JSON.parse(process.env.LAB_TRAFFIC ?? '') as TrafficPlan;
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const counts = { payments: 0, sends: 0, byStatus: {} as Record<string, number> };

/** One send: the status, or `timeout` / `error` when none came. */
function send(key: string, body: string): Promise<string> {
  return new Promise((resolve) => {
    const url = new URL('/payments', plan.proxyUrl);
    const request = http.request(url, {
      method: 'POST',
      agent,
      // In the options, where the instrumentation's start hook reads the key.
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      timeout: plan.timeoutMillis,
    });
    request.on('timeout', () => {
      request.destroy(new Error('timeout'));
      resolve('timeout');
    });
    request.on('error', () => resolve('error'));
    request.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(String(response.statusCode)));
      response.on('error', () => resolve('error'));
    });
    request.end(body);
  });
}

function retryable(status: string): boolean {
  return status === 'timeout' || status === 'error' || status === '409' || status.startsWith('5');
}

async function pay(): Promise<void> {
  const key = randomUUID();
  const body = JSON.stringify({ amount: 1000 + Math.floor(Math.random() * 9000), card: 'tok_lab' });
  counts.payments++;
  for (let sent = 0; sent < plan.maxSends; sent++) {
    if (sent > 0) await sleep(Math.random() * plan.backoffBaseMillis * 2 ** sent);
    const status = await send(key, body);
    counts.sends++;
    counts.byStatus[status] = (counts.byStatus[status] ?? 0) + 1;
    if (!retryable(status)) break;
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
process.stdout.write(`${JSON.stringify(counts)}\n`);
