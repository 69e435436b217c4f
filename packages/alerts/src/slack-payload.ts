import type { Incident } from '@keyscope/detector';
import { type AlertAction, incidentUrl } from './alert-event.ts';
import type { SlackSinkConfig } from './alerts-config.ts';
import { JSON_HEADERS, type PayloadContext, type SinkRequest, truncate } from './sink-request.ts';

/** Block Kit limits: a header's plain text, a section's text and one field's text. */
const HEADER_MAX_CHARS = 150;
const SECTION_MAX_CHARS = 3000;
const FIELD_MAX_CHARS = 2000;

const ICON: Readonly<Record<AlertAction, string>> = {
  trigger: ':rotating_light:',
  resolve: ':white_check_mark:',
};

/**
 * An incoming-webhook message: `text` is the notification fallback (plain, shown in push
 * notifications), the blocks are what the channel shows. Service names and advice come from
 * spans, so they are escaped: Slack reads `<…>` as links and mentions (`<!channel>`).
 */
export function slackRequest(
  sink: SlackSinkConfig,
  action: AlertAction,
  incident: Incident,
  context: PayloadContext,
): SinkRequest {
  const url = incidentUrl(context.publicUrl, incident.id);
  const headline =
    action === 'trigger'
      ? `[${incident.severity.toUpperCase()}] ${incident.title}`
      : `Resolved: ${incident.title}`;
  const fields = [
    `*Severity*\n${incident.severity}`,
    `*Class*\n${incident.class}`,
    `*Service*\n${escapeMrkdwn(incident.service)}`,
    `*Operation*\n${escapeMrkdwn(incident.operation)}`,
    `*Keys*\n${incident.keys}`,
    `*Stores*\n${escapeMrkdwn(incident.stores.join(', ') || '—')}`,
  ];
  const blocks: unknown[] = [
    { type: 'header', text: { type: 'plain_text', text: truncate(headline, HEADER_MAX_CHARS) } },
    {
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: truncate(`${ICON[action]} ${escapeMrkdwn(incident.advice)}`, SECTION_MAX_CHARS),
      },
    },
    {
      type: 'section',
      fields: fields.map((text) => ({ type: 'mrkdwn', text: truncate(text, FIELD_MAX_CHARS) })),
    },
    { type: 'section', text: { type: 'mrkdwn', text: `<${url}|Open incident ${incident.id} in keyscope>` } },
  ];
  if (incident.routingEvent !== null) {
    blocks.push({
      type: 'context',
      elements: [
        { type: 'mrkdwn', text: truncate(escapeMrkdwn(incident.routingEvent.description), FIELD_MAX_CHARS) },
      ],
    });
  }
  return {
    url: sink.url,
    headers: JSON_HEADERS,
    body: { text: `${ICON[action]} ${escapeMrkdwn(headline)} <${url}|open in keyscope>`, blocks },
  };
}

function escapeMrkdwn(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
