import type * as Http from 'node:http';
import { createRequire } from 'node:module';
import { flushTelemetry } from './instrumentation.ts';

/**
 * A payments service with its own node-local dedup store and no idempotency attributes on its
 * spans: the first request of a key executes (201), a repeat gets the stored answer with
 * `Idempotent-Replayed: true`, set the way `REPLAY_HEADER_VIA` says — `setHeader`, or in the
 * headers passed to `writeHead`, which the HTTP instrumentation does not capture.
 *
 * node:http is read through createRequire after the SDK started: the instrumentation patches the
 * CommonJS module object. `{ flush: true }` on the IPC channel exports the spans and answers
 * `{ flushed: true }`.
 */
const http = createRequire(import.meta.url)('node:http') as typeof Http;
const via = process.env.REPLAY_HEADER_VIA;
if (via !== 'writeHead' && via !== 'setHeader')
  throw new Error('REPLAY_HEADER_VIA must be writeHead or setHeader');

const answers = new Map<string, string>();

const server = http.createServer((request, response) => {
  const key = request.headers['idempotency-key'];
  request.resume();
  request.on('end', () => {
    if (typeof key !== 'string' || key === '') {
      response.writeHead(400).end();
      return;
    }
    const stored = answers.get(key);
    if (stored === undefined) {
      const body = JSON.stringify({ charge: `ch_${answers.size + 1}` });
      answers.set(key, body);
      response.writeHead(201, { 'content-type': 'application/json' }).end(body);
    } else if (via === 'writeHead') {
      response
        .writeHead(201, { 'content-type': 'application/json', 'idempotent-replayed': 'true' })
        .end(stored);
    } else {
      response.setHeader('content-type', 'application/json');
      response.setHeader('idempotent-replayed', 'true');
      response.writeHead(201).end(stored);
    }
  });
});

server.listen(Number(process.env.REPLAY_PORT), '127.0.0.1', () => process.send?.({ ready: true }));

process.on('message', (message: { flush?: boolean }) => {
  if (message.flush !== true) return;
  void flushTelemetry().then(() => process.send?.({ flushed: true }));
});
process.on('disconnect', () => process.exit(0));
