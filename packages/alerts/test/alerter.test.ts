import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Attempt } from '@keyscope/attempts';
import type { Incident } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import { server, TEST_EPOCH_UNIX_MILLIS } from '@keyscope/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Alerter, createAlerter, parseAlertsConfig } from '../src/index.ts';
import { failingFirst, type HttpReceiver, startReceiver } from './support/http-receiver.ts';
import { createPipeline, duplicate, nodeADown, QUIET_SECOND, scopeViolation } from './support/pipeline.ts';

const PUBLIC_URL = 'http://127.0.0.1:8080';
const ROUTING_KEY = '0123456789abcdef0123456789abcdef';
const BASE_MILLIS = 1_000;
const T0 = Date.UTC(2026, 5, 1);
const DAY_MILLIS = 24 * 60 * 60 * 1000;

let dir: string;
let store: KeyscopeStore;
let now: number;
let receivers: HttpReceiver[];
let alerters: Alerter[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keyscope-alerts-'));
  store = new KeyscopeStore({ path: join(dir, 'keyscope.db') });
  now = T0;
  receivers = [];
  alerters = [];
});

afterEach(async () => {
  for (const alerter of alerters) await alerter.stop();
  for (const receiver of receivers) await receiver.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function receiver(plan?: Parameters<typeof startReceiver>[0]): Promise<HttpReceiver> {
  const started = await startReceiver(plan);
  receivers.push(started);
  return started;
}

/** An alerter on the test's store and clock; jitter fixed at half the backoff ceiling. */
function alerter(sinks: unknown[], extra: Record<string, unknown> = {}, random = () => 0.5): Alerter {
  const created = createAlerter({
    outbox: store.outbox,
    incidents: store.incidents,
    config: parseAlertsConfig({
      sinks,
      retryBaseMillis: BASE_MILLIS,
      retryCapMillis: 60_000,
      requestTimeoutMillis: 2_000,
      ...extra,
    }),
    publicUrl: PUBLIC_URL,
    now: () => now,
    random,
  });
  alerters.push(created);
  return created;
}

/** The webhook events a receiver accepted, with the idempotency key each carried, in order. */
function webhookEvents(hook: HttpReceiver): [string, string | string[] | undefined][] {
  return hook.accepted().map((r) => [(r.body as { event: string }).event, r.headers['idempotency-key']]);
}

/** The idempotency keys of the webhook requests a receiver accepted, in order. */
function idempotencyKeys(hook: HttpReceiver): (string | string[] | undefined)[] {
  return hook.accepted().map((r) => r.headers['idempotency-key']);
}

function onlyIncident(incidents: Incident[]): Incident {
  expect(incidents).toHaveLength(1);
  return incidents[0]!;
}

describe('enqueueing', () => {
  it('pages each sink once per incident however often the incident is upserted', async () => {
    const hook = await receiver();
    const slack = await receiver();
    const alerts = alerter([
      { type: 'webhook', url: hook.url },
      { type: 'slack', url: slack.url },
    ]);
    const pipeline = createPipeline(store, alerts);
    const incident = onlyIncident(pipeline.ingest(duplicate('k1', 0)).incidents);
    // Two more keys join the same incident (same hour bucket): upserts, not new pages.
    pipeline.ingest(duplicate('k2', 60));
    pipeline.ingest(duplicate('k3', 120));
    expect(alerts.incidentsChanged([incident, incident])).toBe(0);

    expect(await alerts.deliverDue()).toEqual({
      delivered: 2,
      retried: 0,
      abandoned: 0,
      deferred: 0,
      late: 0,
    });
    expect(await alerts.deliverDue()).toEqual({
      delivered: 0,
      retried: 0,
      abandoned: 0,
      deferred: 0,
      late: 0,
    });
    expect(hook.accepted()).toHaveLength(1);
    expect(slack.accepted()).toHaveLength(1);
    expect(
      store.outbox.deliveriesOf(incident.id).map((row) => [row.sink, row.dedupKey, row.delivered]),
    ).toEqual([
      ['webhook', `${incident.id}:trigger`, true],
      ['slack', `${incident.id}:trigger`, true],
    ]);
  });

  it('pages a failover once, when its incident settles, not the time-bucket incident its keys first sat in', async () => {
    const hook = await receiver();
    const alerts = alerter([{ type: 'webhook', url: hook.url }]);
    const pipeline = createPipeline(store, alerts);
    // Node a goes silent at second 19 while b and c serve on; k1 ran on a, then again on b.
    const traffic = nodeADown();
    const inSecond = (s: number) =>
      traffic.filter((x) => x.bucketStartUnixMillis === TEST_EPOCH_UNIX_MILLIS + s * 1000);
    for (let s = 0; s < 60; s++) {
      const attempts = s === 18 ? duplicate('k1', 18) : [];
      const changes = pipeline.ingest(attempts, inSecond(s));
      if (s === 18)
        expect(changes.incidents.map((i) => [i.routingEvent, i.settled])).toEqual([[null, false]]);
      pipeline.tick(s + 1);
    }
    await alerts.deliverDue();
    const opened = hook.accepted().map((r) => r.body as { event: string; incident: Incident });
    expect(opened.map((body) => [body.event, body.incident.routingEvent?.type])).toEqual([
      ['incident.opened', 'node_down'],
    ]);
  });

  it('delivers the incident as stored when it went out, not as first enqueued', async () => {
    const hook = await receiver();
    const alerts = alerter([{ type: 'webhook', url: hook.url }]);
    const pipeline = createPipeline(store, alerts);
    pipeline.ingest(duplicate('k1', 0));
    pipeline.ingest(duplicate('k2', 60));
    await alerts.deliverDue();
    expect(hook.accepted()[0]!.body).toMatchObject({ event: 'incident.opened', incident: { keys: 2 } });
  });

  it('does not page a sink for incidents below its minimum severity', async () => {
    const pager = await receiver();
    const chat = await receiver();
    const alerts = alerter([
      { type: 'pagerduty', url: pager.url, routingKey: ROUTING_KEY },
      { type: 'slack', url: chat.url, minSeverity: 'warning' },
    ]);
    const incident = onlyIncident(createPipeline(store, alerts).ingest(scopeViolation('k1')).incidents);
    expect(incident).toMatchObject({ class: 'scope_violation', severity: 'warning' });

    await alerts.deliverDue();
    expect(pager.requests).toEqual([]);
    expect(chat.accepted()).toHaveLength(1);
  });

  it('enqueues nothing when the transaction that stores the incident rolls back', () => {
    const alerts = alerter([{ type: 'webhook', url: 'http://127.0.0.1:9/hook' }]);
    const pipeline = createPipeline(store, alerts);
    expect(() =>
      store.transaction(() => {
        pipeline.ingest(duplicate('k1'));
        throw new Error('the OTLP request failed after the detector ran');
      }),
    ).toThrow();
    expect(store.outbox.pending()).toBe(0);
    expect(store.counts().incidents).toBe(0);
  });
});

describe('retries', () => {
  it('retries a sink that answers 503 and then resets the connection, and delivers once', async () => {
    const hook = await receiver(failingFirst({ status: 503 }, 'reset'));
    const alerts = alerter([{ type: 'webhook', url: hook.url }]);
    createPipeline(store, alerts).ingest(duplicate('k1'));

    expect(await alerts.deliverDue()).toMatchObject({ retried: 1 });
    // Full jitter at 0.5: the first retry waits half of base × 2^0, the second half of base × 2^1.
    now += BASE_MILLIS / 2 - 1;
    expect(await alerts.deliverDue()).toMatchObject({ retried: 0, delivered: 0 });
    now += 1;
    expect(await alerts.deliverDue()).toMatchObject({ retried: 1 });
    now += BASE_MILLIS - 1;
    expect(await alerts.deliverDue()).toMatchObject({ retried: 0, delivered: 0 });
    now += 1;
    expect(await alerts.deliverDue()).toMatchObject({ delivered: 1 });
    now += 60_000;
    expect(await alerts.deliverDue()).toMatchObject({ delivered: 0, retried: 0 });

    expect(hook.requests.map((r) => r.answer)).toEqual([503, 'reset', 202]);
    expect(hook.accepted()).toHaveLength(1);
    expect(store.outbox.pending()).toBe(0);
    expect(alerts.snapshot().webhook).toMatchObject({ delivered: 1, retried: 2, abandoned: 0 });
  });

  it('spreads retries over the whole backoff window and never past the cap', async () => {
    const draws = [0, 0.999];
    const hook = await receiver(() => ({ status: 500 }));
    const alerts = alerter(
      [{ type: 'webhook', url: hook.url }],
      { retryCapMillis: 1_500 },
      () => draws.shift() ?? 0.999,
    );
    createPipeline(store, alerts).ingest(duplicate('k1'));
    await alerts.deliverDue(); // jitter 0: due again at once
    expect(await alerts.deliverDue()).toMatchObject({ retried: 1 });
    // Second failure: ceiling min(1500, 1000 × 2) = 1500, drawn at 0.999 → 1498.
    now += 1_497;
    expect(await alerts.deliverDue()).toMatchObject({ retried: 0 });
    now += 1;
    expect(await alerts.deliverDue()).toMatchObject({ retried: 1 });
    expect(hook.requests).toHaveLength(3);
  });

  it('waits as long as the sink’s Retry-After says', async () => {
    const hook = await receiver(failingFirst({ status: 429, headers: { 'retry-after': '7' } }));
    const alerts = alerter([{ type: 'slack', url: hook.url }]);
    createPipeline(store, alerts).ingest(duplicate('k1'));
    expect(await alerts.deliverDue()).toMatchObject({ retried: 1 });
    now += 6_999;
    expect(await alerts.deliverDue()).toMatchObject({ delivered: 0 });
    now += 1;
    expect(await alerts.deliverDue()).toMatchObject({ delivered: 1 });
  });

  it('abandons a delivery the sink rejects with 400 and records why', async () => {
    const hook = await receiver(() => ({ status: 400, body: '{"status":"invalid event"}' }));
    const alerts = alerter([{ type: 'pagerduty', url: hook.url, routingKey: ROUTING_KEY }]);
    const incident = onlyIncident(createPipeline(store, alerts).ingest(duplicate('k1')).incidents);
    expect(await alerts.deliverDue()).toMatchObject({ abandoned: 1 });
    now += 24 * 60 * 60 * 1000;
    expect(await alerts.deliverDue()).toMatchObject({ abandoned: 0, retried: 0 });
    expect(hook.requests).toHaveLength(1);
    const [row] = store.outbox.deliveriesOf(incident.id);
    expect(row!.lastError).toMatch(/^abandoned: HTTP 400/);
    expect(store.outbox.pending()).toBe(0);
    expect(alerts.snapshot().pagerduty).toMatchObject({ abandoned: 1, delivered: 0 });
  });

  it('abandons the deliveries of a sink that was removed from the configuration', async () => {
    const first = alerter([{ type: 'webhook', name: 'ops', url: 'http://127.0.0.1:9/hook' }]);
    createPipeline(store, first).ingest(duplicate('k1'));
    const second = alerter([{ type: 'webhook', name: 'other', url: 'http://127.0.0.1:9/hook' }]);
    expect(await second.deliverDue()).toMatchObject({ abandoned: 1 });
    expect(second.snapshot().ops).toMatchObject({ abandoned: 1 });
  });
});

describe('restarts', () => {
  it('delivers what was pending after a restart and does not repeat what was delivered', async () => {
    const up = await receiver();
    const down = await receiver(() => ({ status: 503 }));
    const path = join(dir, 'keyscope.db');
    const before = alerter([
      { type: 'webhook', name: 'up', url: up.url },
      { type: 'webhook', name: 'later', url: down.url },
    ]);
    const incident = onlyIncident(createPipeline(store, before).ingest(duplicate('k1')).incidents);
    expect(await before.deliverDue()).toMatchObject({ delivered: 1, retried: 1 });
    await before.stop();
    store.close();

    // The second sink comes back at a new address; the outbox holds events, not requests.
    const back = await receiver();
    store = new KeyscopeStore({ path });
    const after = alerter([
      { type: 'webhook', name: 'up', url: up.url },
      { type: 'webhook', name: 'later', url: back.url },
    ]);
    // The restarted pipeline re-reports the same incident: nothing new is enqueued.
    const restored = createPipeline(store, after, store.findings.recent(0));
    restored.ingest(duplicate('k1'));
    expect(after.incidentsChanged([incident])).toBe(0);
    now += 60_000;
    expect(await after.deliverDue()).toMatchObject({ delivered: 1 });

    expect(up.accepted()).toHaveLength(1);
    expect(down.accepted()).toHaveLength(0);
    expect(back.accepted()).toHaveLength(1);
    expect(back.accepted()[0]!.headers['idempotency-key']).toBe(`${incident.id}:trigger`);
    expect(store.outbox.pending()).toBe(0);
  });
});

describe('trigger and resolve', () => {
  it('sends the resolve after the trigger, with the same dedup key, even when the trigger had to be retried', async () => {
    const pager = await receiver(failingFirst({ status: 502 }));
    const alerts = alerter([{ type: 'pagerduty', url: pager.url, routingKey: ROUTING_KEY }]);
    const pipeline = createPipeline(store, alerts);
    const opened = onlyIncident(pipeline.ingest(duplicate('k1')).incidents);
    expect(await alerts.deliverDue()).toMatchObject({ retried: 1 });

    const resolved = onlyIncident(pipeline.tick(QUIET_SECOND).incidents);
    expect(resolved).toMatchObject({ id: opened.id, status: 'resolved' });
    // The resolve is due now, the trigger only after its backoff: the resolve must wait.
    expect(await alerts.deliverDue()).toMatchObject({ deferred: 1, delivered: 0 });
    for (let pass = 0; pass < 10 && store.outbox.pending() > 0; pass++) {
      now += 5_000;
      await alerts.deliverDue();
    }

    expect(pager.accepted().map((r) => r.body)).toMatchObject([
      { event_action: 'trigger', dedup_key: opened.id },
      { event_action: 'resolve', dedup_key: opened.id },
    ]);
    expect(alerts.snapshot().pagerduty).toMatchObject({ delivered: 2, retried: 1, deferred: 1 });
  });

  it('enqueues trigger and resolve for an incident first seen already resolved, in that order', async () => {
    const hook = await receiver();
    const alerts = alerter([{ type: 'webhook', url: hook.url }]);
    const pipeline = createPipeline(store, alerts);
    const opened = onlyIncident(pipeline.ingest(duplicate('k1')).incidents);
    // A second alerter sees the incident for the first time after it resolved (e.g. new config).
    const late = alerter([{ type: 'webhook', name: 'late', url: hook.url }]);
    pipeline.tick(QUIET_SECOND);
    expect(late.incidentsChanged([store.incidents.get(opened.id)!])).toBe(2);
    await late.deliverDue();
    expect(hook.accepted().map((r) => (r.body as { event: string }).event)).toEqual([
      'incident.opened',
      'incident.resolved',
    ]);
  });

  it('resolves the page of an incident the detector retracted when it found the failover', async () => {
    const hook = await receiver();
    // One request at a time, so the requests arrive in outbox order.
    const alerts = alerter([{ type: 'webhook', url: hook.url }], { concurrency: 1 });
    const pipeline = createPipeline(store, alerts);
    const first = onlyIncident(pipeline.ingest(duplicate('k1', 20)).incidents);
    await alerts.deliverDue();

    pipeline.ingest([], nodeADown());
    const regrouped = pipeline.tick(60);
    expect(regrouped.retractedIncidentIds).toEqual([first.id]);
    const second = onlyIncident(regrouped.incidents);
    expect(second.routingEvent?.type).toBe('node_down');
    await alerts.deliverDue();

    expect(webhookEvents(hook)).toEqual([
      ['incident.opened', `${first.id}:trigger`],
      ['incident.resolved', `${first.id}:resolve`],
      ['incident.opened', `${second.id}:trigger`],
    ]);
  });

  it('pages an incident again when it reopens after its resolve, and resolves that page too', async () => {
    const hook = await receiver();
    const pager = await receiver();
    const alerts = alerter(
      [
        { type: 'webhook', url: hook.url },
        { type: 'pagerduty', url: pager.url, routingKey: ROUTING_KEY },
      ],
      { concurrency: 1 },
    );
    const pipeline = createPipeline(store, alerts);
    const opened = onlyIncident(pipeline.ingest(duplicate('k1', 0)).incidents);
    await alerts.deliverDue();
    // Quiet for 30 minutes: resolved at 00:30.
    expect(onlyIncident(pipeline.tick(40 * 60).incidents)).toMatchObject({ status: 'resolved' });
    await alerts.deliverDue();
    // A key of the same hour executes twice at 00:50, after the resolution: the incident reopens.
    const reopened = onlyIncident(pipeline.ingest(duplicate('k2', 50 * 60)).incidents);
    expect(reopened).toMatchObject({ id: opened.id, status: 'open', keys: 2 });
    pipeline.ingest(duplicate('k3', 51 * 60)); // more keys while open again: no new page
    await alerts.deliverDue();
    expect(onlyIncident(pipeline.tick(90 * 60).incidents)).toMatchObject({ status: 'resolved' });
    await alerts.deliverDue();

    expect(webhookEvents(hook)).toEqual([
      ['incident.opened', `${opened.id}:trigger`],
      ['incident.resolved', `${opened.id}:resolve`],
      ['incident.opened', `${opened.id}:trigger:2`],
      ['incident.resolved', `${opened.id}:resolve:2`],
    ]);
    // PagerDuty keeps one dedup key per incident: a trigger after a resolve opens a new alert.
    expect(pager.accepted().map((r) => r.body)).toMatchObject([
      { event_action: 'trigger', dedup_key: opened.id },
      { event_action: 'resolve', dedup_key: opened.id },
      { event_action: 'trigger', dedup_key: opened.id },
      { event_action: 'resolve', dedup_key: opened.id },
    ]);
  });

  it('pages a reopened incident once, also after its first page was purged past retention', async () => {
    const hook = await receiver();
    const alerts = alerter([{ type: 'webhook', url: hook.url }], { concurrency: 1 });
    const pipeline = createPipeline(store, alerts);
    const opened = onlyIncident(pipeline.ingest(duplicate('k1', 0)).incidents);
    await alerts.deliverDue();
    pipeline.tick(40 * 60);
    await alerts.deliverDue();
    now += 10 * DAY_MILLIS;
    pipeline.ingest(duplicate('k2', 50 * 60)); // reopens: page 2
    await alerts.deliverDue();
    // Retention takes the first page's delivered rows; the incident, open, stays.
    store.purge({ attemptsBeforeUnixMillis: 0, recordsBeforeUnixMillis: T0 + DAY_MILLIS, maxRows: 100 });
    expect(store.outbox.deliveriesOf(opened.id).map((row) => row.dedupKey)).toEqual([
      `${opened.id}:trigger:2`,
    ]);

    pipeline.ingest(duplicate('k3', 52 * 60)); // the open incident gains a key: no new page
    expect(store.outbox.pending()).toBe(0);
    pipeline.tick(120 * 60);
    await alerts.deliverDue();
    expect(idempotencyKeys(hook)).toEqual([
      `${opened.id}:trigger`,
      `${opened.id}:resolve`,
      `${opened.id}:trigger:2`,
      `${opened.id}:resolve:2`,
    ]);
  });

  it('does not page again while a manual resolve holds, and does once the incident gains keys', async () => {
    const hook = await receiver();
    const alerts = alerter([{ type: 'webhook', url: hook.url }], { concurrency: 1 });
    const pipeline = createPipeline(store, alerts);
    const opened = onlyIncident(pipeline.ingest(duplicate('k1', 0)).incidents);
    await alerts.deliverDue();
    // Resolved by hand, paged the way the API pages it.
    store.incidents.resolve(opened.id, 'alice', now);
    store.transaction(() => alerts.incidentsChanged([store.incidents.get(opened.id)!]));
    await alerts.deliverDue();

    // The same key runs a third time: the detector reports its incident (still open to it), changed.
    const changed = pipeline.ingest([server({ key: 'k1', node: 'c', store: 'C', at: 4 })]).incidents;
    expect(changed.map((incident) => [incident.id, incident.status, incident.keys])).toEqual([
      [opened.id, 'open', 1],
    ]);
    expect(store.incidents.get(opened.id)).toMatchObject({ status: 'resolved', resolvedBy: 'alice' });
    expect(store.outbox.pending()).toBe(0);

    pipeline.ingest(duplicate('k2', 60));
    expect(store.incidents.get(opened.id)).toMatchObject({ status: 'open', keys: 2 });
    await alerts.deliverDue();
    expect(idempotencyKeys(hook)).toEqual([
      `${opened.id}:trigger`,
      `${opened.id}:resolve`,
      `${opened.id}:trigger:2`,
    ]);
  });

  it('never sends the page of an incident retracted before its trigger went out', async () => {
    const hook = await receiver();
    const alerts = alerter([{ type: 'webhook', url: hook.url }], { concurrency: 1 });
    const pipeline = createPipeline(store, alerts);
    pipeline.ingest(duplicate('k1', 20));
    pipeline.ingest([], nodeADown());
    const second = onlyIncident(pipeline.tick(60).incidents);
    expect(await alerts.deliverDue()).toEqual({
      delivered: 1,
      retried: 0,
      abandoned: 2,
      deferred: 0,
      late: 0,
    });
    expect(idempotencyKeys(hook)).toEqual([`${second.id}:trigger`]);
  });
});

describe('critical pages after an outage', () => {
  const POLL_MILLIS = 1_000;

  /**
   * A webhook that answers 503 for `outageMillis`, then 202, and the delivery loop's passes every
   * second on a fake clock, with the jitter drawn from `draws` (0.999 once they run out: the
   * longest waits). Returns how long after the target came back the page was delivered, and the
   * requests the target saw.
   */
  async function pageAfterOutage(options: {
    outageMillis: number;
    draws?: number[];
    attempts?: Attempt[];
  }): Promise<{ afterBackMillis: number; requests: number }> {
    const draws = [...(options.draws ?? [])];
    const outageStore = new KeyscopeStore({ path: ':memory:' });
    let clock = T0;
    const backUnixMillis = T0 + options.outageMillis;
    const hook = await receiver(() => (clock < backUnixMillis ? { status: 503 } : { status: 202 }));
    const alerts = createAlerter({
      outbox: outageStore.outbox,
      incidents: outageStore.incidents,
      config: parseAlertsConfig({
        sinks: [{ type: 'webhook', url: hook.url, minSeverity: 'warning' }],
        pollIntervalMillis: POLL_MILLIS,
      }),
      publicUrl: PUBLIC_URL,
      now: () => clock,
      random: () => draws.shift() ?? 0.999,
    });
    try {
      createPipeline(outageStore, alerts).ingest(options.attempts ?? duplicate('k1'));
      for (let pass = 0; pass < 2_000; pass++) {
        if ((await alerts.deliverDue()).delivered === 1) {
          return { afterBackMillis: clock - backUnixMillis, requests: hook.requests.length };
        }
        clock += POLL_MILLIS;
      }
      throw new Error('the page was not delivered within 2,000 passes');
    } finally {
      await alerts.stop();
      outageStore.close();
    }
  }

  it('pages a critical incident within 30 s of its webhook coming back from a 45 s outage', async () => {
    // Full jitter draws that leave the last failed attempt at 44 s, just before the target is back:
    // with a backoff doubling up to 5 minutes the next one could be a minute away.
    const { afterBackMillis } = await pageAfterOutage({
      outageMillis: 45_000,
      draws: [0.999, 0.999, 0.999, 0.999, 0.999, 0.4],
    });
    expect(afterBackMillis).toBeGreaterThanOrEqual(0);
    expect(afterBackMillis).toBeLessThanOrEqual(30_000);
  });

  it('pages a critical incident within criticalRetryCapMillis and a poll of its target coming back, however long it was down', async () => {
    const worst = { outageMillis: 0, afterBackMillis: 0 };
    for (const outageMillis of [5_000, 20_000, 45_000, 64_000, 100_000, 130_000, 250_000]) {
      const { afterBackMillis } = await pageAfterOutage({ outageMillis });
      if (afterBackMillis > worst.afterBackMillis) Object.assign(worst, { outageMillis, afterBackMillis });
    }
    // 15 s (the default critical cap) plus the poll that notices the entry is due.
    expect(worst.afterBackMillis).toBeLessThanOrEqual(15_000 + POLL_MILLIS);
  });

  it('lets pages below critical back off further, sparing a target that is down', async () => {
    // A scope violation is a warning (the sink pages warnings too).
    const config = parseAlertsConfig({ sinks: [{ type: 'webhook', url: 'http://127.0.0.1:9/hook' }] });
    expect(config.criticalRetryCapMillis).toBe(15_000);
    expect(config.retryCapMillis).toBe(300_000);
    const critical = await pageAfterOutage({ outageMillis: 600_000 });
    const warning = await pageAfterOutage({ outageMillis: 600_000, attempts: scopeViolation('k1') });
    expect(warning.requests).toBeLessThan(critical.requests);
  });

  it('honours a Retry-After only up to the critical cap', async () => {
    const hook = await receiver(failingFirst({ status: 503, headers: { 'retry-after': '3600' } }));
    const alerts = alerter([{ type: 'webhook', url: hook.url }], { criticalRetryCapMillis: 10_000 });
    createPipeline(store, alerts).ingest(duplicate('k1'));
    expect(await alerts.deliverDue()).toMatchObject({ retried: 1 });
    now += 9_999;
    expect(await alerts.deliverDue()).toMatchObject({ delivered: 0 });
    now += 1;
    expect(await alerts.deliverDue()).toMatchObject({ delivered: 1 });
  });
});

describe('slow sinks', () => {
  /** Passes on the fake clock, a minute apart, every 50 ms of real time until `done` (at most `maxPasses`). */
  async function passUntil(alerts: Alerter, done: () => boolean, maxPasses = 100): Promise<void> {
    for (let i = 0; i < maxPasses && !done(); i++) {
      now += 60_000;
      await alerts.deliverDue();
      await sleep(50);
    }
  }

  it('records within the pass a webhook that answers with a body without end, 2xx or 503', async () => {
    let served = 0;
    const endless = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        // The first request gets a 503 trickling dots, the next a 200 streaming zeros as fast as they drain.
        if (served++ === 0) {
          response.writeHead(503, { 'content-type': 'text/plain' });
          const drip = setInterval(() => response.write('.'), 20);
          response.on('close', () => clearInterval(drip));
          return;
        }
        response.writeHead(200, { 'content-type': 'text/plain' });
        const zeros = Buffer.alloc(64 * 1024, '0');
        const body = new Readable({ read: () => void body.push(zeros) });
        response.on('close', () => body.destroy());
        body.pipe(response);
      });
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(endless.address() as AddressInfo).port}/hook`;
      const alerts = alerter([{ type: 'webhook', url }], { lateRequestTimeoutMillis: 60_000 });
      const incident = onlyIncident(createPipeline(store, alerts).ingest(duplicate('k1')).incidents);

      expect(await alerts.deliverDue()).toMatchObject({ retried: 1, late: 0 });
      expect(store.outbox.deliveriesOf(incident.id)[0]!.lastError).toMatch(/^HTTP 503: \.+$/);
      now += 60_000;
      const rssBefore = process.memoryUsage().rss;
      expect(await alerts.deliverDue()).toMatchObject({ delivered: 1, late: 0 });
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(200 * 1024 * 1024);
      expect(store.outbox.pending()).toBe(0);
    } finally {
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  });

  it('does not send a page again while a webhook slower than the request timeout is still answering', async () => {
    const hook = await receiver((index) =>
      index === 0 ? { status: 202, afterMillis: 600 } : { status: 202 },
    );
    const alerts = alerter([{ type: 'webhook', url: hook.url }], { requestTimeoutMillis: 100 });
    const incident = onlyIncident(createPipeline(store, alerts).ingest(duplicate('k1')).incidents);

    expect(await alerts.deliverDue()).toMatchObject({ late: 1, retried: 0 });
    // Passes go on (the entry's backoff would long be over) while the first request is open.
    await passUntil(alerts, () => hook.requests[0]?.closedUnixMillis !== undefined);
    expect(hook.requests.map((r) => r.answer)).toEqual([202]);
    await sleep(50);
    await passUntil(alerts, () => false, 5);

    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0]!.headers['idempotency-key']).toBe(`${incident.id}:trigger`);
    expect(store.outbox.pending()).toBe(0);
    expect(store.outbox.deliveriesOf(incident.id)).toMatchObject([{ delivered: true, lastError: null }]);
    expect(alerts.snapshot().webhook).toMatchObject({ delivered: 1, retried: 0 });
  });

  it('sends the page again with the same Idempotency-Key only after a request past lateRequestTimeoutMillis was aborted', async () => {
    const slack = await receiver((index) =>
      index === 0 ? { status: 200, afterMillis: 60_000 } : { status: 200, body: 'ok' },
    );
    const alerts = alerter([{ type: 'slack', url: slack.url }], {
      requestTimeoutMillis: 100,
      lateRequestTimeoutMillis: 400,
    });
    const incident = onlyIncident(createPipeline(store, alerts).ingest(duplicate('k1')).incidents);

    expect(await alerts.deliverDue()).toMatchObject({ late: 1 });
    await passUntil(alerts, () => slack.accepted().length > 0);

    const [first, second] = slack.requests;
    expect(slack.requests).toHaveLength(2);
    expect(first!.answer).toBe('none');
    expect(first!.closedUnixMillis).toBeLessThanOrEqual(second!.arrivedUnixMillis);
    expect(slack.requests.map((r) => r.headers['idempotency-key'])).toEqual([
      `${incident.id}:trigger`,
      `${incident.id}:trigger`,
    ]);
    expect(alerts.snapshot().slack).toMatchObject({ delivered: 1, retried: 1 });
  });

  it('holds at most `concurrency` late requests open to one sink and defers its other pages', async () => {
    const hook = await receiver(() => ({ status: 202, afterMillis: 400 }));
    const alerts = alerter([{ type: 'webhook', url: hook.url }], {
      requestTimeoutMillis: 100,
      concurrency: 2,
    });
    const pipeline = createPipeline(store, alerts);
    for (const hour of [0, 1, 2, 3]) pipeline.ingest(duplicate(`k${hour}`, hour * 3600));
    expect(store.outbox.pending()).toBe(4);

    expect(await alerts.deliverDue()).toMatchObject({ late: 2, deferred: 2 });
    await sleep(100);
    expect(hook.requests).toHaveLength(2);
    await passUntil(alerts, () => store.outbox.pending() === 0);

    expect(hook.accepted()).toHaveLength(4);
    expect(new Set(idempotencyKeys(hook)).size).toBe(4);
    const open = (at: number) =>
      hook.requests.filter((r) => r.arrivedUnixMillis <= at && (r.closedUnixMillis ?? Infinity) > at).length;
    expect(Math.max(...hook.requests.map((r) => open(r.arrivedUnixMillis)))).toBeLessThanOrEqual(2);
  });

  it('aborts the late requests on stop and leaves their pages for the next start, with the same key', async () => {
    const silent = await receiver(() => ({ status: 202, afterMillis: 60_000 }));
    const before = alerter([{ type: 'webhook', url: silent.url }], { requestTimeoutMillis: 100 });
    const incident = onlyIncident(createPipeline(store, before).ingest(duplicate('k1')).incidents);
    expect(await before.deliverDue()).toMatchObject({ late: 1 });

    const stopping = Date.now();
    await before.stop();
    expect(Date.now() - stopping).toBeLessThan(5_000);
    // The receiver sees the connection close a moment after the client dropped it.
    for (let i = 0; i < 100 && silent.requests[0]!.closedUnixMillis === undefined; i++) await sleep(10);
    expect(silent.requests[0]!.closedUnixMillis).toBeDefined();
    expect(store.outbox.deliveriesOf(incident.id)).toMatchObject([
      { delivered: false, lastError: expect.stringContaining('keyscope is stopping') },
    ]);
    expect(before.snapshot().webhook).toMatchObject({ retried: 1, delivered: 0 });

    const back = await receiver();
    const after = alerter([{ type: 'webhook', url: back.url }]);
    now += 60_000;
    expect(await after.deliverDue()).toMatchObject({ delivered: 1 });
    expect(idempotencyKeys(back)).toEqual([`${incident.id}:trigger`]);
  });
});

describe('the delivery loop', () => {
  it('delivers on its own once started, and stops without leaving a timer', async () => {
    const hook = await receiver();
    const alerts = alerter([{ type: 'webhook', url: hook.url }], { pollIntervalMillis: 10 });
    await alerts.stop(); // before start: a no-op
    alerts.start();
    alerts.start();
    createPipeline(store, alerts).ingest(duplicate('k1'));
    for (let i = 0; i < 200 && hook.accepted().length === 0; i++) await sleep(10);
    expect(hook.accepted()).toHaveLength(1);

    await alerts.stop();
    await alerts.stop();
    createPipeline(store, alerts).ingest(duplicate('k2', 7200));
    await sleep(100);
    expect(hook.requests).toHaveLength(1);
    expect(store.outbox.pending()).toBe(1);
  });

  it('reports a failing pass and keeps running', async () => {
    const errors: unknown[] = [];
    const hook = await receiver();
    const alerts = createAlerter({
      outbox: store.outbox,
      incidents: store.incidents,
      config: parseAlertsConfig({ sinks: [{ type: 'webhook', url: hook.url }], pollIntervalMillis: 10 }),
      publicUrl: PUBLIC_URL,
      onError: (error) => errors.push(error),
    });
    alerters.push(alerts);
    const broken = store.outbox.due.bind(store.outbox);
    let failures = 1;
    store.outbox.due = (nowUnixMillis, limit) => {
      if (failures-- > 0) throw new Error('database is locked');
      return broken(nowUnixMillis, limit);
    };
    createPipeline(store, alerts).ingest(duplicate('k1'));
    alerts.start();
    for (let i = 0; i < 200 && hook.accepted().length === 0; i++) await sleep(10);
    expect(errors).toHaveLength(1);
    expect(hook.accepted()).toHaveLength(1);
  });
});

function sleep(millis: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, millis));
}
