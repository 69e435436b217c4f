import type { Incident } from '@keyscope/detector';
import { KeyscopeStore } from '@keyscope/store';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type Alerter,
  type AlertmanagerSinkConfig,
  createAlerter,
  parseAlertsConfig,
  postableAlert,
} from '../src/index.ts';
import { type AlertmanagerProcess, startAlertmanager } from './support/alertmanager-process.ts';
import { createPipeline, duplicate, incidentOf, QUIET_SECOND, scopeViolation } from './support/pipeline.ts';

const PUBLIC_URL = 'http://127.0.0.1:8080';

interface GettableAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  generatorURL: string;
  startsAt: string;
  endsAt: string;
  status: { state: string };
}

describe('a real Alertmanager', () => {
  let alertmanager: AlertmanagerProcess;
  // Kept and rethrown by every test, so a missing binary fails each of them instead of skipping.
  let unavailable: unknown;
  let store: KeyscopeStore;
  let alerter: Alerter;

  beforeAll(async () => {
    try {
      alertmanager = await startAlertmanager();
    } catch (error) {
      unavailable = error;
    }
  });

  afterAll(async () => {
    await alertmanager?.stop();
  });

  beforeEach(() => {
    if (unavailable !== undefined) throw unavailable;
    store = new KeyscopeStore({ path: ':memory:' });
    alerter = createAlerter({
      outbox: store.outbox,
      incidents: store.incidents,
      config: parseAlertsConfig({
        sinks: [{ type: 'alertmanager', url: alertmanager.url, minSeverity: 'warning' }],
      }),
      publicUrl: PUBLIC_URL,
    });
  });

  afterEach(async () => {
    await alerter?.stop();
    store?.close();
  });

  async function alertsOf(incidentId: string): Promise<GettableAlert[]> {
    const filter = encodeURIComponent(`incident_id="${incidentId}"`);
    const response = await fetch(`${alertmanager.url}/api/v2/alerts?filter=${filter}`);
    expect(response.status).toBe(200);
    return (await response.json()) as GettableAlert[];
  }

  async function resolvedReceived(): Promise<number> {
    const text = await (await fetch(`${alertmanager.url}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('alertmanager_alerts_received_total{status="resolved",version="v2"}'));
    return Number(line?.split(' ')[1] ?? Number.NaN);
  }

  it('shows an incident as an active alert with its labels and link, then resolves it', async () => {
    const pipeline = createPipeline(store, alerter);
    const [incident] = pipeline.ingest(duplicate('k1')).incidents as [Incident];
    // A second incident, still open when the first resolves, shows Alertmanager kept its alerts.
    const [other] = pipeline.ingest(duplicate('k2', QUIET_SECOND - 60)).incidents as [Incident];
    expect(await alerter.deliverDue()).toMatchObject({ delivered: 2 });

    const [alert, ...rest] = await alertsOf(incident.id);
    expect(rest).toEqual([]);
    expect(alert!.labels).toEqual({
      alertname: 'KeyscopeDuplicateExecution',
      severity: 'critical',
      service: 'payments',
      operation: '/payments',
      class: 'cross_store_duplicate',
      incident_id: incident.id,
    });
    expect(alert!.annotations).toMatchObject({ summary: incident.title, description: incident.advice });
    expect(alert!.generatorURL).toBe(`${PUBLIC_URL}/incidents/${incident.id}`);
    expect(alert!.status.state).toBe('active');
    expect(Date.parse(alert!.startsAt)).toBe(incident.openedUnixMillis);
    expect(Date.parse(alert!.endsAt)).toBeGreaterThan(Date.now());

    const resolvedBefore = await resolvedReceived();
    const changed = pipeline.tick(QUIET_SECOND).incidents;
    expect(changed.map((i) => [i.id, i.status])).toEqual([[incident.id, 'resolved']]);
    expect(await alerter.deliverDue()).toMatchObject({ delivered: 1 });

    // Alertmanager's API lists only alerts whose endsAt is still ahead: a resolved one drops out.
    expect(await alertsOf(incident.id)).toEqual([]);
    expect(await resolvedReceived()).toBe(resolvedBefore + 1);
    expect(await alertsOf(other.id)).toHaveLength(1);
  });

  it('shows a resolved incident active again when it reopens', async () => {
    const pipeline = createPipeline(store, alerter);
    const [incident] = pipeline.ingest(duplicate('k1', 0)).incidents as [Incident];
    await alerter.deliverDue();
    pipeline.tick(40 * 60); // quiet for 30 minutes: resolved
    await alerter.deliverDue();
    expect(await alertsOf(incident.id)).toEqual([]);

    // Another key of the same hour executes twice after the resolution: the incident reopens.
    const [reopened] = pipeline.ingest(duplicate('k2', 50 * 60)).incidents as [Incident];
    expect(reopened).toMatchObject({ id: incident.id, status: 'open' });
    expect(await alerter.deliverDue()).toMatchObject({ delivered: 1 });
    const [alert, ...rest] = await alertsOf(incident.id);
    expect(rest).toEqual([]);
    expect(alert!.status.state).toBe('active');
    expect(Date.parse(alert!.endsAt)).toBeGreaterThan(Date.now());
  });

  it('re-sends open incidents so they do not expire, and only after their trigger went out', async () => {
    const pipeline = createPipeline(store, alerter);
    const [incident] = pipeline.ingest(scopeViolation('k1')).incidents as [Incident];
    expect(incident.severity).toBe('warning');
    expect(await alerter.refreshOpen([incident])).toBe(0);
    expect(await alertsOf(incident.id)).toEqual([]);

    await alerter.deliverDue();
    const [first] = await alertsOf(incident.id);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await alerter.refreshOpen(store.incidents.list({ status: 'open' }, { limit: 10 }).items)).toBe(1);
    const [second] = await alertsOf(incident.id);
    expect(second!.labels.alertname).toBe('KeyscopeScopeViolation');
    expect(Date.parse(second!.endsAt)).toBeGreaterThan(Date.parse(first!.endsAt));
    expect(alerter.snapshot().alertmanager).toMatchObject({ delivered: 1, refreshed: 1, refresh_failed: 0 });
  });
});

describe('postableAlert', () => {
  const sink: AlertmanagerSinkConfig = {
    type: 'alertmanager',
    name: 'alertmanager',
    url: 'http://127.0.0.1:9093',
    minSeverity: 'high',
    resendIntervalMillis: 60_000,
  };
  const now = Date.UTC(2026, 5, 1, 12);

  function incident(overrides: Partial<Incident>): Incident {
    return { ...incidentOf(duplicate('k1')), ...overrides };
  }

  it('keeps a firing alert alive for four re-send intervals', () => {
    const alert = postableAlert(incident({}), true, sink, { publicUrl: PUBLIC_URL, nowUnixMillis: now });
    expect(Date.parse(alert.endsAt)).toBe(now + 4 * 60_000);
  });

  it('ends a resolved alert at its resolve time, never later than now', () => {
    const past = incident({ status: 'resolved', resolvedUnixMillis: now - 1_000 });
    const ahead = incident({ status: 'resolved', resolvedUnixMillis: now + 60_000 });
    const context = { publicUrl: PUBLIC_URL, nowUnixMillis: now };
    expect(Date.parse(postableAlert(past, false, sink, context).endsAt)).toBe(now - 1_000);
    expect(Date.parse(postableAlert(ahead, false, sink, context).endsAt)).toBe(now);
  });

  it('never starts an alert after it ends when event time runs ahead of the clock', () => {
    const early = incident({
      openedUnixMillis: now + 5_000,
      status: 'resolved',
      resolvedUnixMillis: now + 9_000,
    });
    const alert = postableAlert(early, false, sink, { publicUrl: PUBLIC_URL, nowUnixMillis: now });
    expect(Date.parse(alert.startsAt)).toBeLessThanOrEqual(Date.parse(alert.endsAt));
  });
});
