import { KeyscopeStore } from '@keyscope/store';
import { describe, expect, it } from 'vitest';
import {
  createAlerter,
  type PagerDutySinkConfig,
  pagerDutyRequest,
  parseAlertsConfig,
} from '../src/index.ts';
import { startReceiver } from './support/http-receiver.ts';
import { createPipeline, duplicate, incidentOf, QUIET_SECOND } from './support/pipeline.ts';

const PUBLIC_URL = 'http://127.0.0.1:8080';
const ROUTING_KEY = '0123456789abcdef0123456789abcdef';
const CONTEXT = { publicUrl: PUBLIC_URL, nowUnixMillis: Date.UTC(2026, 5, 1) };
const SINK: PagerDutySinkConfig = {
  type: 'pagerduty',
  name: 'pagerduty',
  url: 'https://events.pagerduty.com/v2/enqueue',
  routingKey: ROUTING_KEY,
  minSeverity: 'high',
};

describe('PagerDuty Events API v2 payloads', () => {
  it('posts a trigger and then a resolve for one incident, both with the incident id as dedup_key', async () => {
    const receiver = await startReceiver(() => ({ status: 202, body: '{"status":"success"}' }));
    const store = new KeyscopeStore({ path: ':memory:' });
    const alerter = createAlerter({
      outbox: store.outbox,
      incidents: store.incidents,
      config: parseAlertsConfig({
        sinks: [{ type: 'pagerduty', url: receiver.url, routingKey: ROUTING_KEY }],
      }),
      publicUrl: PUBLIC_URL,
    });
    try {
      const pipeline = createPipeline(store, alerter);
      const [incident] = pipeline.ingest(duplicate('k1')).incidents;
      await alerter.deliverDue();
      pipeline.tick(QUIET_SECOND);
      await alerter.deliverDue();

      const [trigger, resolve] = receiver.requests;
      expect(receiver.requests).toHaveLength(2);
      expect(trigger!.method).toBe('POST');
      expect(trigger!.headers['content-type']).toBe('application/json');
      expect(trigger!.body).toEqual({
        routing_key: ROUTING_KEY,
        event_action: 'trigger',
        dedup_key: incident!.id,
        payload: {
          summary: incident!.title,
          source: 'payments',
          severity: 'critical',
          timestamp: new Date(incident!.openedUnixMillis).toISOString(),
          component: '/payments',
          group: 'payments',
          class: 'cross_store_duplicate',
          custom_details: expect.objectContaining({
            incident_id: incident!.id,
            keys: 1,
            stores: ['A', 'B'],
            advice: incident!.advice,
          }),
        },
        client: 'keyscope',
        client_url: PUBLIC_URL,
        links: [{ href: `${PUBLIC_URL}/incidents/${incident!.id}`, text: 'Incident in keyscope' }],
      });
      expect(resolve!.body).toEqual({
        routing_key: ROUTING_KEY,
        event_action: 'resolve',
        dedup_key: incident!.id,
      });
    } finally {
      await alerter.stop();
      store.close();
      await receiver.close();
    }
  });

  it('maps keyscope’s high severity to PagerDuty’s error', () => {
    const incident = { ...incidentOf(duplicate('k1')), severity: 'high' as const };
    const request = pagerDutyRequest(SINK, 'trigger', incident, CONTEXT);
    expect(request.body).toMatchObject({ payload: { severity: 'error' } });
  });

  it('keeps the summary within PagerDuty’s 1024 characters and the dedup key within 255', () => {
    const incident = { ...incidentOf(duplicate('k1')), title: 'x'.repeat(5000) };
    const body = pagerDutyRequest(SINK, 'trigger', incident, CONTEXT).body as {
      dedup_key: string;
      payload: { summary: string };
    };
    expect(body.payload.summary).toHaveLength(1024);
    expect(body.dedup_key.length).toBeLessThanOrEqual(255);
  });

  it('posts to the events endpoint by default', () => {
    const config = parseAlertsConfig({ sinks: [{ type: 'pagerduty', routingKey: ROUTING_KEY }] });
    const request = pagerDutyRequest(
      config.sinks[0] as PagerDutySinkConfig,
      'resolve',
      incidentOf(duplicate('k1')),
      CONTEXT,
    );
    expect(request.url).toBe('https://events.pagerduty.com/v2/enqueue');
  });
});
