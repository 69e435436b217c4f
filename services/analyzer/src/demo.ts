import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { encodeTraces } from '@keyscope/otlp';
import { scenarios, simulate } from '@keyscope/simulator';
import type { ServeConfig } from './config.ts';
import { formatHostPort } from './listen-address.ts';
import type { Logger } from './logger.ts';
import { type RunningService, startServe } from './serve.ts';

const SPANS_PER_REQUEST = 512;

/** The demo's own database, apart from serve's, so that trying the demo never touches it. */
export const DEMO_DB_PATH = 'keyscope-demo.db';

export interface DemoOptions {
  /**
   * Delete the database file (and its -wal and -shm) before starting, so that the incidents
   * printed are this run's only. The CLI sets it for the demo's own file unless `--keep`.
   */
  fresh: boolean;
}

/**
 * `keyscope demo`: the embedded service, then the simulator's node-failover scenario sent to it
 * over OTLP/HTTP — payments on node-scoped dedup stores, nodes failing, sticky sessions failing
 * over, clients retrying with the same key — so a newcomer sees a grouped incident within a minute.
 * The traffic is stamped as if it happened in the last few minutes. Its first line names the
 * database and whether it started empty.
 */
export async function runDemo(
  config: ServeConfig,
  logger: Logger,
  options: DemoOptions,
): Promise<RunningService> {
  const path = config.db.path;
  if (path === ':memory:') {
    logger.info('demo: database :memory:, kept in memory only');
  } else if (options.fresh) {
    await Promise.all(['', '-wal', '-shm'].map((suffix) => rm(`${path}${suffix}`, { force: true })));
    logger.info(`demo: database ${path}, emptied at start (--keep keeps it)`);
  } else {
    logger.info(`demo: database ${path}, ${existsSync(path) ? 'kept as an earlier run left it' : 'new'}`);
  }
  const service = await startServe(config, { logger });
  const scenario = scenarios.nodeFailover();
  // On a whole second, as the scenario's own start is: node activity is counted per second, so
  // every run infers the same failures and groups the same keys (the simulation is seeded). Ids
  // derived from the failures' times (incidents, routing events) differ from run to run.
  const startUnixMillis = Math.floor((Date.now() - scenario.durationMillis - 60_000) / 1000) * 1000;
  const simulation = simulate({ ...scenario, startUnixMillis });
  const { spans, truth } = simulation;
  const url = `http://${formatHostPort(service.addresses.otlpHttp)}/v1/traces`;
  logger.info(
    `demo: sending ${spans.length} spans of simulated checkout → payments traffic with ${truth.routingEvents.length} node failures to ${url}`,
  );
  for (let i = 0; i < spans.length; i += SPANS_PER_REQUEST) {
    const response = await fetch(url, {
      method: 'POST',
      body: encodeTraces(spans.slice(i, i + SPANS_PER_REQUEST)),
      headers: { 'content-type': 'application/x-protobuf' },
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`demo: ${url} answered ${response.status}`);
  }
  service.pipeline.tick();

  const api = `http://${formatHostPort(service.addresses.api)}`;
  // In the order they opened: the store lists the newest stored first, and which was stored first
  // depends on when the service's ticks fell while the spans were arriving. An earlier run's, in a
  // kept database, had its last finding before this run's traffic began.
  const incidents = service.store.incidents
    .list({ status: 'open', sinceUnixMillis: startUnixMillis }, { limit: 20 })
    .items.sort((a, b) => a.openedUnixMillis - b.openedUnixMillis || (a.id < b.id ? -1 : 1));
  logger.info(
    `demo: ${truth.keys.length} keys really executed twice; keyscope opened ${incidents.length} incidents:`,
  );
  for (const incident of incidents) logger.info(`  ${incident.severity.padEnd(8)} ${incident.title}`);
  const example = truth.keys[0];
  logger.info(`demo: the web page:      ${api}/`);
  logger.info(`demo: the incidents:     ${api}/api/v1/incidents?status=open`);
  if (incidents[0] !== undefined)
    logger.info(`demo: one incident:      ${api}/api/v1/incidents/${incidents[0].id}`);
  if (example !== undefined)
    logger.info(`demo: did it run twice? ${api}/api/v1/keys/${encodeURIComponent(example.key)}`);
  logger.info(`demo: the scope report:  ${api}/api/v1/scopes`);
  logger.info('demo: keyscope keeps serving; Ctrl-C stops it');
  return service;
}
