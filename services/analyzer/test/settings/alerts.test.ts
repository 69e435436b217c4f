import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { serverSpan } from '@keyscope/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ConfiguredKeyscope, executedTwice, startConfigured, until } from './configured-keyscope.ts';

interface Page {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
  readonly atMillis: number;
}

/** Local alert targets: /fail answers 500, /hang… never answers, any other path 200. */
let sinkServer: Server;
let sinkBase: string;
let pages: Page[] = [];
const hanging: ServerResponse[] = [];

beforeAll(async () => {
  sinkServer = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      pages.push({
        path: request.url ?? '',
        headers: request.headers,
        body: JSON.parse(text),
        atMillis: Date.now(),
      });
      if (request.url?.startsWith('/hang')) hanging.push(response);
      else response.writeHead(request.url === '/fail' ? 500 : 200).end();
    });
  });
  await new Promise<void>((resolve) => sinkServer.listen(0, '127.0.0.1', resolve));
  sinkBase = `http://127.0.0.1:${(sinkServer.address() as { port: number }).port}`;
});
afterAll(() => {
  for (const response of hanging) response.destroy();
  sinkServer.closeAllConnections();
  return new Promise<void>((resolve) => sinkServer.close(() => resolve()));
});

let keyscope: ConfiguredKeyscope | undefined;
/** keyscope's clock runs ahead of the wall clock by this much: incidents settle when it jumps. */
let offsetMillis = 0;
afterEach(async () => {
  await keyscope?.stop();
  keyscope = undefined;
  pages = [];
});

async function start(alerts: Record<string, unknown>, env: Record<string, string> = {}) {
  offsetMillis = 0;
  keyscope = await startConfigured({ file: { alerts }, env }, { now: () => Date.now() + offsetMillis });
  return keyscope;
}

/** A critical incident (a key executed in two stores), settled: its pages are due. */
async function criticalIncident(running: ConfiguredKeyscope, key = 'paged-key'): Promise<string> {
  expect((await running.exportSpans(executedTwice(key))).status).toBe(200);
  return settle(running);
}

/** A warning (a retry crossed the key's scope without executing), settled. */
async function warningIncident(running: ConfiguredKeyscope): Promise<string> {
  expect((await running.exportSpans(executedTwice('warned-key', { secondOutcome: 'error' }))).status).toBe(
    200,
  );
  return settle(running);
}

async function settle(running: ConfiguredKeyscope): Promise<string> {
  const incidents = await running.json<{ items: Array<{ id: string }> }>('/api/v1/incidents');
  // Settled once activity ~16 s past the repeat is closed: traffic half a minute on.
  offsetMillis += 30_000;
  const later = Date.now() + offsetMillis - 1_000;
  const traffic = [0, 1, 2].map((i) =>
    serverSpan({ trace: 9_000 + i, id: 9_000 + i, startMillis: later + i * 200 }),
  );
  expect((await running.exportSpans(traffic)).status).toBe(200);
  return incidents.items[0]!.id;
}

const pagesTo = (path: string) => pages.filter((page) => page.path === path);
const sleep = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis));

describe('alerts.sinks[] fields, from a config file', () => {
  const routingKey = 'R0123456789abcdef0123456789abcde';

  it('alerts.sinks[].url: a critical incident is paged to the sink’s URL', async () => {
    const running = await start({
      pollIntervalMillis: 100,
      sinks: [{ type: 'webhook', url: `${sinkBase}/hook` }],
    });
    const id = await criticalIncident(running);
    await until(() => pagesTo('/hook').length > 0, 5_000);
    expect(JSON.stringify(pagesTo('/hook')[0]!.body)).toContain(id);
  });

  it('alerts.sinks[].headers: a webhook delivery carries the configured headers', async () => {
    const running = await start({
      pollIntervalMillis: 100,
      sinks: [
        { type: 'webhook', url: `${sinkBase}/hook`, headers: { authorization: 'Bearer webhook-secret' } },
      ],
    });
    await criticalIncident(running);
    await until(() => pagesTo('/hook').length > 0, 5_000);
    expect(pagesTo('/hook')[0]!.headers.authorization).toBe('Bearer webhook-secret');
  });

  it('alerts.sinks[].type: a slack sink is sent Slack’s message, a webhook sink keyscope’s event', async () => {
    const running = await start({
      pollIntervalMillis: 100,
      sinks: [
        { type: 'slack', url: `${sinkBase}/slack` },
        { type: 'webhook', url: `${sinkBase}/hook` },
      ],
    });
    await criticalIncident(running);
    await until(() => pagesTo('/slack').length > 0 && pagesTo('/hook').length > 0, 5_000);
    expect(pagesTo('/slack')[0]!.body).toHaveProperty('blocks');
    expect(pagesTo('/hook')[0]!.body).not.toHaveProperty('blocks');
  });

  it('alerts.sinks[].name: deliveries are counted under the sink’s name', async () => {
    const running = await start({
      pollIntervalMillis: 100,
      sinks: [{ type: 'webhook', name: 'payments-oncall', url: `${sinkBase}/hook` }],
    });
    await criticalIncident(running);
    await until(() => pagesTo('/hook').length > 0, 5_000);
    await until(
      async () =>
        (await running.metric('keyscope_alert_deliveries_total', {
          sink: 'payments-oncall',
          outcome: 'delivered',
        })) > 0,
      3_000,
    );
  });

  it('alerts.sinks[].routingKey: a PagerDuty event carries the routing key', async () => {
    const running = await start({
      pollIntervalMillis: 100,
      sinks: [{ type: 'pagerduty', url: `${sinkBase}/pagerduty`, routingKey }],
    });
    await criticalIncident(running);
    await until(() => pagesTo('/pagerduty').length > 0, 5_000);
    expect(pagesTo('/pagerduty')[0]!.body).toMatchObject({ routing_key: routingKey });
  });

  it('alerts.sinks[].minSeverity: a warning pages the sink set to warning, not one left at high', async () => {
    const running = await start({
      pollIntervalMillis: 100,
      sinks: [
        { type: 'webhook', name: 'warnings', url: `${sinkBase}/warnings`, minSeverity: 'warning' },
        { type: 'webhook', name: 'default', url: `${sinkBase}/hook` },
      ],
    });
    await warningIncident(running);
    await until(() => pagesTo('/warnings').length > 0, 5_000);
    await sleep(500);
    expect(pagesTo('/hook')).toEqual([]);
  });

  it('alerts.sinks[].resendIntervalMillis: Alertmanager is sent an open incident again every interval', async () => {
    const running = await start({
      pollIntervalMillis: 100,
      sinks: [{ type: 'alertmanager', url: `${sinkBase}/alertmanager`, resendIntervalMillis: 500 }],
    });
    await criticalIncident(running);
    // The default (60 s) would send it once here.
    await until(() => pagesTo('/alertmanager/api/v2/alerts').length >= 3, 6_000);
  });
});

describe('alerts delivery settings, from a config file and KEYSCOPE_* variables', () => {
  /** Attempts a failing sink was sent within three seconds of its page being due. */
  async function attemptsInThreeSeconds(): Promise<number> {
    await until(() => pagesTo('/fail').length > 0, 5_000);
    await sleep(3_000);
    return pagesTo('/fail').length;
  }

  // Under the defaults (1 s base, caps of 15 s and 5 min) about four attempts fit in three seconds.
  it('alerts.retryBaseMillis: a failing sink is retried at once when it is 10', async () => {
    // The whole section as one variable: it is one field of the schema.
    const alerts = {
      pollIntervalMillis: 50,
      retryBaseMillis: 10,
      sinks: [{ type: 'webhook', url: `${sinkBase}/fail` }],
    };
    const running = await start({}, { KEYSCOPE_ALERTS: JSON.stringify(alerts) });
    await criticalIncident(running);
    expect(await attemptsInThreeSeconds()).toBeGreaterThanOrEqual(8);
  });

  it('alerts.criticalRetryCapMillis: a critical page is retried at least every 100 ms when capped so', async () => {
    const running = await start({
      pollIntervalMillis: 50,
      criticalRetryCapMillis: 100,
      sinks: [{ type: 'webhook', url: `${sinkBase}/fail` }],
    });
    await criticalIncident(running);
    expect(await attemptsInThreeSeconds()).toBeGreaterThanOrEqual(8);
  });

  it('alerts.retryCapMillis: a warning page is retried at least every 100 ms when capped so', async () => {
    const running = await start({
      pollIntervalMillis: 50,
      retryBaseMillis: 100,
      retryCapMillis: 100,
      sinks: [{ type: 'webhook', url: `${sinkBase}/fail`, minSeverity: 'warning' }],
    });
    await warningIncident(running);
    expect(await attemptsInThreeSeconds()).toBeGreaterThanOrEqual(8);
  });

  it('alerts.pollIntervalMillis: a due page waits for the next pass, ten minutes away when set so', async () => {
    const running = await start({
      pollIntervalMillis: 600_000,
      sinks: [{ type: 'webhook', url: `${sinkBase}/hook` }],
    });
    await criticalIncident(running);
    // The default pass (every second) would have sent it.
    await sleep(3_000);
    expect(pagesTo('/hook')).toEqual([]);
  });

  it('alerts.lateRequestTimeoutMillis: a request left unanswered is aborted and sent again', async () => {
    const running = await start({
      pollIntervalMillis: 50,
      retryBaseMillis: 10,
      requestTimeoutMillis: 100,
      lateRequestTimeoutMillis: 300,
      sinks: [{ type: 'webhook', url: `${sinkBase}/hang` }],
    });
    await criticalIncident(running);
    // The default (60 s) keeps the first request open through the test.
    await until(() => pagesTo('/hang').length >= 2, 5_000);
    const [first, second] = pagesTo('/hang');
    expect(second!.headers['idempotency-key']).toBe(first!.headers['idempotency-key']);
  });

  it('alerts.requestTimeoutMillis: a pass waits a second for a slow sink when set so, then moves on', async () => {
    const running = await start({
      pollIntervalMillis: 50,
      concurrency: 1,
      requestTimeoutMillis: 1_000,
      sinks: [
        { type: 'webhook', name: 'slow', url: `${sinkBase}/hang` },
        { type: 'webhook', name: 'next', url: `${sinkBase}/hook` },
      ],
    });
    await criticalIncident(running);
    await until(() => pagesTo('/hang').length > 0, 5_000);
    // The default (10 s) holds the one request slot of the pass that long.
    await until(() => pagesTo('/hook').length > 0, 3_000);
    expect(pagesTo('/hook')[0]!.atMillis - pagesTo('/hang')[0]!.atMillis).toBeGreaterThanOrEqual(700);
  });

  it('alerts.concurrency: with two requests a pass, two slow sinks hold back a third sink’s page', async () => {
    const running = await start({
      pollIntervalMillis: 50,
      concurrency: 2,
      requestTimeoutMillis: 1_000,
      sinks: [
        { type: 'webhook', name: 'slow-a', url: `${sinkBase}/hang-a` },
        { type: 'webhook', name: 'slow-b', url: `${sinkBase}/hang-b` },
        { type: 'webhook', name: 'next', url: `${sinkBase}/hook` },
      ],
    });
    await criticalIncident(running);
    await until(() => pagesTo('/hang-a').length > 0 && pagesTo('/hang-b').length > 0, 5_000);
    // The default (4) sends all three at once.
    await until(() => pagesTo('/hook').length > 0, 3_000);
    expect(pagesTo('/hook')[0]!.atMillis - pagesTo('/hang-b')[0]!.atMillis).toBeGreaterThanOrEqual(700);
  });

  it('alerts.batchSize: one entry a pass is sent when set to one', async () => {
    const running = await start({
      pollIntervalMillis: 1_000,
      batchSize: 1,
      sinks: ['b1', 'b2', 'b3'].map((name) => ({ type: 'webhook', name, url: `${sinkBase}/${name}` })),
    });
    await criticalIncident(running);
    await until(() => ['/b1', '/b2', '/b3'].every((path) => pagesTo(path).length > 0), 8_000);
    const times = ['/b1', '/b2', '/b3'].map((path) => pagesTo(path)[0]!.atMillis).sort((a, b) => a - b);
    // The default (100) sends all three in one pass.
    expect(times[2]! - times[0]!).toBeGreaterThanOrEqual(1_500);
  });
});
