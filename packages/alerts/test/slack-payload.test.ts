import { KeyscopeStore } from '@keyscope/store';
import { server } from '@keyscope/testkit';
import { describe, expect, it } from 'vitest';
import { createAlerter, parseAlertsConfig, type SlackSinkConfig, slackRequest } from '../src/index.ts';
import { startReceiver } from './support/http-receiver.ts';
import { createPipeline, duplicate, incidentOf } from './support/pipeline.ts';

const PUBLIC_URL = 'http://127.0.0.1:8080';
const CONTEXT = { publicUrl: PUBLIC_URL, nowUnixMillis: Date.UTC(2026, 5, 1) };
const SINK: SlackSinkConfig = {
  type: 'slack',
  name: 'slack',
  url: 'https://hooks.slack.com/services/T/B/X',
  minSeverity: 'high',
};

interface SlackMessage {
  text: string;
  blocks: { type: string; text?: { type: string; text: string }; fields?: { text: string }[] }[];
}

/** Every mrkdwn text of the message: what Slack parses for links and mentions. */
function mrkdwnTexts(message: SlackMessage): string[] {
  return [
    message.text,
    ...message.blocks.flatMap((block) => [
      ...(block.text?.type === 'mrkdwn' ? [block.text.text] : []),
      ...(block.fields ?? []).map((field) => field.text),
    ]),
  ];
}

describe('Slack incoming-webhook messages', () => {
  it('posts the incident title, advice and link as text and blocks', async () => {
    const receiver = await startReceiver(() => ({ status: 200, body: 'ok' }));
    const store = new KeyscopeStore({ path: ':memory:' });
    const alerter = createAlerter({
      outbox: store.outbox,
      incidents: store.incidents,
      config: parseAlertsConfig({ sinks: [{ type: 'slack', url: receiver.url }] }),
      publicUrl: PUBLIC_URL,
    });
    try {
      const [incident] = createPipeline(store, alerter).ingest(duplicate('k1')).incidents;
      expect(await alerter.deliverDue()).toMatchObject({ delivered: 1 });
      const message = receiver.requests[0]!.body as SlackMessage;
      const url = `${PUBLIC_URL}/incidents/${incident!.id}`;
      expect(message.text).toContain(incident!.title);
      expect(message.text).toContain(url);
      expect(message.blocks[0]).toEqual({
        type: 'header',
        text: { type: 'plain_text', text: `[CRITICAL] ${incident!.title}` },
      });
      expect(message.blocks.some((b) => b.text?.text.includes(`<${url}|`))).toBe(true);
      // Slack does not deduplicate; the header lets a relay in front of it.
      expect(receiver.requests[0]!.headers['idempotency-key']).toBe(`${incident!.id}:trigger`);
      expect(mrkdwnTexts(message).join('\n')).toContain(incident!.advice.slice(0, 40));
    } finally {
      await alerter.stop();
      store.close();
      await receiver.close();
    }
  });

  it('says when an incident is resolved', () => {
    const message = slackRequest(SINK, 'resolve', incidentOf(duplicate('k1'), { resolved: true }), CONTEXT)
      .body as SlackMessage;
    expect(message.blocks[0]!.text!.text).toMatch(/^Resolved: /);
  });

  it('escapes names from spans so they cannot mention a channel or forge a link', () => {
    const incident = incidentOf([
      server({ key: 'k1', service: '<!channel>', node: 'a', store: 'A', at: 0 }),
      server({ key: 'k1', service: '<!channel>', node: 'b', store: 'B', at: 2 }),
    ]);
    const message = slackRequest(SINK, 'trigger', incident, CONTEXT).body as SlackMessage;
    const texts = mrkdwnTexts(message).join('\n');
    expect(texts).not.toContain('<!channel>');
    expect(texts).toContain('&lt;!channel&gt;');
  });

  it('keeps the header within Block Kit’s 150 characters', () => {
    const incident = { ...incidentOf(duplicate('k1')), title: 'y'.repeat(400) };
    const message = slackRequest(SINK, 'trigger', incident, CONTEXT).body as SlackMessage;
    expect(message.blocks[0]!.text!.text.length).toBeLessThanOrEqual(150);
  });
});
