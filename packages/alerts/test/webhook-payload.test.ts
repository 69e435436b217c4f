import { KeyscopeStore } from '@keyscope/store';
import { describe, expect, it } from 'vitest';
import { createAlerter, parseAlertsConfig } from '../src/index.ts';
import { startReceiver } from './support/http-receiver.ts';
import { createPipeline, duplicate, QUIET_SECOND } from './support/pipeline.ts';

const PUBLIC_URL = 'http://127.0.0.1:8080/';

describe('generic webhook payloads', () => {
  it('posts incident.opened and incident.resolved with the incident, its link and the configured headers', async () => {
    const receiver = await startReceiver(() => ({ status: 204 }));
    const store = new KeyscopeStore({ path: ':memory:' });
    const alerter = createAlerter({
      outbox: store.outbox,
      incidents: store.incidents,
      config: parseAlertsConfig({
        sinks: [{ type: 'webhook', url: receiver.url, headers: { Authorization: 'Bearer s3cret' } }],
      }),
      publicUrl: PUBLIC_URL,
    });
    try {
      const pipeline = createPipeline(store, alerter);
      const [incident] = pipeline.ingest(duplicate('k1')).incidents;
      await alerter.deliverDue();
      pipeline.tick(QUIET_SECOND);
      await alerter.deliverDue();

      const [opened, resolved] = receiver.requests;
      expect(receiver.requests).toHaveLength(2);
      expect(opened!.headers).toMatchObject({
        authorization: 'Bearer s3cret',
        'content-type': 'application/json',
        'idempotency-key': `${incident!.id}:trigger`,
      });
      expect(opened!.body).toMatchObject({
        event: 'incident.opened',
        url: `http://127.0.0.1:8080/incidents/${incident!.id}`,
        incident: {
          id: incident!.id,
          status: 'open',
          class: 'cross_store_duplicate',
          keys: 1,
          title: incident!.title,
        },
      });
      expect(resolved!.headers['idempotency-key']).toBe(`${incident!.id}:resolve`);
      expect(resolved!.body).toMatchObject({
        event: 'incident.resolved',
        incident: { id: incident!.id, status: 'resolved' },
      });
    } finally {
      await alerter.stop();
      store.close();
      await receiver.close();
    }
  });
});
