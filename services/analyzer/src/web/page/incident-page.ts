import { apiGet } from './api-client.ts';
import type {
  AttemptJson,
  FindingJson,
  IncidentDetailJson,
  IncidentJson,
  RoutingEventJson,
  UiConfig,
} from './api-types.ts';
import { attemptTable, traceCell } from './attempt-table.ts';
import { severityBadge, statusBadge } from './badges.ts';
import { csvDownloadLink } from './csv-download.ts';
import { el, keyHref, replaceChildren, withChildren } from './element-builder.ts';
import { incidentActions } from './incident-actions.ts';
import { moreText, namesList } from './listed-names.ts';
import { mainRegion, pageFooter, setPageTitle } from './page-frame.ts';
import { routingEventHref } from './routing-events-page.ts';
import { stackedOnNarrowScreens } from './stacked-table.ts';
import { suspicionList } from './suspicion-list.ts';
import { formatDateTime, formatDuration } from './time-format.ts';
import type { KeyedAttempt } from './timeline-layout.ts';
import { timelineLegend } from './timeline-legend.ts';
import { showTimeline, type TimelineView } from './timeline-view.ts';
import { CAUSE_LABELS, CLASS_LABELS, RETRIED_BY_LABELS } from './vocabulary.ts';

/**
 * `/incidents/:id`, where alerts land: what happened (summary, advice), the attempts over time
 * across stores, and the keys with their trace ids.
 */
export async function renderIncidentPage(config: UiConfig, id: string): Promise<void> {
  const detail = await apiGet<IncidentDetailJson>(`/api/v1/incidents/${encodeURIComponent(id)}`);
  setPageTitle(detail.title, 'incidents');

  const findings = [...detail.findings].sort(
    (a, b) => b.executions - a.executions || Date.parse(a.firstSeen) - Date.parse(b.firstSeen),
  );
  const requested = new URLSearchParams(location.search).get('key');
  let pinned = findings.find((finding) => finding.key === requested)?.key ?? findings[0]?.key ?? null;

  const figure = el('figure', { class: 'timeline-figure' });
  const selectedPanel = el('section', {
    class: 'selected-key',
    'aria-labelledby': 'selected-key-title',
    'aria-live': 'polite',
  });
  let timeline: TimelineView | null = null;
  const keyButtons = new Map<string, HTMLButtonElement>();

  const pin = (key: string) => {
    pinned = key;
    timeline?.select(key);
    for (const [buttonKey, button] of keyButtons)
      button.setAttribute('aria-pressed', String(buttonKey === key));
    const url = new URL(location.href);
    url.searchParams.set('key', key);
    history.replaceState(null, '', url);
    drawSelectedPanel(selectedPanel, findings, key, config.traceLinkTemplate);
  };
  const preview = (key: string | null) => timeline?.select(key ?? pinned);

  const summary = incidentSummary(config, detail, () => location.reload());
  replaceChildren(
    mainRegion(),
    el('p', { class: 'breadcrumb' }, el('a', { href: '/' }, '← All incidents')),
    summary,
    el(
      'section',
      { class: 'timeline-section', 'aria-labelledby': 'timeline-title' },
      el('h2', { id: 'timeline-title' }, 'Attempts over time'),
      el(
        'p',
        { class: 'subtle' },
        'One lane per dedup store. Hover a key in the table below to highlight its attempts; select it to keep it highlighted. Hover a mark for its details; drag across the timeline to zoom in.',
      ),
      timelineLegend(),
      figure,
    ),
    keysSection(detail, findings, config.traceLinkTemplate, keyButtons, pin, preview),
    csvDownloadLink(
      `/api/v1/incidents/${encodeURIComponent(id)}?format=csv`,
      `keyscope-${id}.csv`,
      'Download these keys as CSV (one row per execution, for reconciliation)',
    ),
    selectedPanel,
    alertsSection(detail),
    pageFooter(),
  );

  timeline = showTimeline(figure, {
    attempts: keyedAttempts(findings),
    events: routingEvents(detail),
    onSelect: pin,
  });
  if (pinned !== null) pin(pinned);
}

function incidentSummary(config: UiConfig, incident: IncidentJson, changed: () => void): HTMLElement {
  const event = incident.routingEvent;
  const row = (term: string, ...value: (string | Node | null)[]) => [
    el('dt', {}, term),
    el('dd', {}, ...value),
  ];
  return el(
    'section',
    { class: 'incident-summary', 'aria-labelledby': 'incident-title' },
    el('h1', { id: 'incident-title' }, incident.title),
    el(
      'p',
      { class: 'badges' },
      severityBadge(incident.severity),
      ' ',
      statusBadge(incident),
      ' ',
      el('span', { class: 'badge' }, CLASS_LABELS[incident.class]),
    ),
    incidentActions(config, incident, changed),
    el(
      'div',
      { class: 'summary-grid' },
      el(
        'dl',
        { class: 'facts' },
        ...row('Where', `${incident.service} ${incident.operation}`),
        ...row('Keys', String(incident.keys)),
        ...row(
          `Dedup stores (${incident.storesTotal.toLocaleString('en-US')})`,
          namesList(incident.stores, incident.storesTotal, 'store'),
        ),
        ...row(
          `Nodes (${incident.nodesTotal.toLocaleString('en-US')})`,
          namesList(incident.nodes, incident.nodesTotal, 'node'),
        ),
        ...row(
          'Routing event',
          event === null
            ? 'none found: grouped by time'
            : el(
                'span',
                {},
                event.description,
                el(
                  'span',
                  { class: 'subtle' },
                  ` (${formatDateTime(event.start)} – ${formatDateTime(event.end)}${event.ended ? '' : ', still open'})`,
                ),
                ' ',
                el(
                  'a',
                  { href: routingEventHref(event), class: 'routing-event-link' },
                  'among routing events',
                ),
              ),
        ),
        ...row('Opened', el('time', { datetime: incident.openedAt }, formatDateTime(incident.openedAt))),
        ...row(
          'Last finding',
          el('time', { datetime: incident.lastFindingAt }, formatDateTime(incident.lastFindingAt)),
        ),
        ...(incident.acknowledgedAt === null
          ? []
          : row(
              'Acknowledged',
              `${formatDateTime(incident.acknowledgedAt)} by ${incident.acknowledgedBy ?? 'unknown'}`,
            )),
        ...(incident.resolvedAt === null
          ? []
          : row(
              'Resolved',
              `${formatDateTime(incident.resolvedAt)}${incident.resolvedBy === null ? ' (quiet period)' : ` by ${incident.resolvedBy}`}`,
            )),
        ...row('Incident id', el('code', {}, incident.id)),
      ),
      el(
        'section',
        { class: 'advice', 'aria-labelledby': 'advice-title' },
        el('h2', { id: 'advice-title' }, 'What to change'),
        el('p', {}, incident.advice),
      ),
    ),
  );
}

function keysSection(
  detail: IncidentDetailJson,
  findings: FindingJson[],
  template: string,
  buttons: Map<string, HTMLButtonElement>,
  pin: (key: string) => void,
  preview: (key: string | null) => void,
): HTMLElement {
  const rows = findings.map((finding) => {
    const button = el(
      'button',
      { type: 'button', class: 'secondary small', 'aria-pressed': 'false' },
      'Show on timeline',
    );
    button.addEventListener('click', () => pin(finding.key));
    buttons.set(finding.key, button);
    const traces = [...new Set(finding.attempts.map((attempt) => attempt.traceId))];
    const row = el(
      'tr',
      { 'data-key-row': '' },
      el(
        'th',
        { scope: 'row', class: 'wrap-anywhere' },
        el('a', { href: keyHref(finding.key), class: 'key-link' }, finding.key),
      ),
      el('td', {}, finding.tenants.join(', ') || '—'),
      el('td', { class: 'number' }, String(finding.executions)),
      el('td', { class: 'number' }, finding.storesTotal.toLocaleString('en-US')),
      el('td', { class: 'number' }, finding.gapMillis === null ? '—' : formatDuration(finding.gapMillis)),
      el(
        'td',
        {},
        RETRIED_BY_LABELS[finding.retriedBy],
        finding.cause === null ? null : el('div', { class: 'subtle' }, CAUSE_LABELS[finding.cause]),
      ),
      withChildren(
        el('td'),
        traces.map((traceId) => traceCell({ traceId, spanId: '' }, template)),
      ),
      el('td', {}, button),
    );
    row.addEventListener('mouseenter', () => preview(finding.key));
    row.addEventListener('mouseleave', () => preview(null));
    row.addEventListener('focusin', () => preview(finding.key));
    row.addEventListener('focusout', () => preview(null));
    return row;
  });
  const section = el(
    'section',
    { class: 'keys', 'aria-labelledby': 'keys-title' },
    el('h2', { id: 'keys-title' }, `Affected keys (${detail.keys.toLocaleString('en-US')})`),
    findings.length >= detail.keys
      ? null
      : el(
          'p',
          { class: 'subtle', 'data-more-keys': detail.keys - findings.length },
          `The first ${findings.length} keys are shown, ${moreText(findings.length, detail.keys, 'key')}: the CSV download below holds every one.`,
        ),
    el(
      'table',
      { class: 'keys-table' },
      el(
        'caption',
        { class: 'visually-hidden' },
        'Keys of this incident with their executions and trace ids',
      ),
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          ...[
            'Key',
            'Tenant',
            'Executions',
            'Stores',
            'Gap between starts',
            'Retried by',
            'Trace ids',
            'Timeline',
          ].map((heading) => el('th', { scope: 'col' }, heading)),
        ),
      ),
      withChildren(el('tbody'), rows),
    ),
  );
  stackedOnNarrowScreens(section.querySelector('table')!);
  return section;
}

function drawSelectedPanel(panel: HTMLElement, findings: FindingJson[], key: string, template: string): void {
  const finding = findings.find((candidate) => candidate.key === key);
  if (finding === undefined) return;
  replaceChildren(
    panel,
    el('h2', { id: 'selected-key-title' }, 'Selected key ', el('code', { class: 'wrap-anywhere' }, key)),
    el(
      'p',
      {},
      `Executed ${finding.executions} time${finding.executions === 1 ? '' : 's'} in ${finding.storesTotal.toLocaleString('en-US')} store${finding.storesTotal === 1 ? '' : 's'}; retried by ${RETRIED_BY_LABELS[finding.retriedBy]}${finding.routing.affinityBroken ? '; session affinity broke (attempts on different nodes)' : ''}. `,
      el('a', { href: keyHref(key) }, 'Everything about this key'),
    ),
    finding.suspicion === null
      ? null
      : el(
          'div',
          { class: 'suspected-because' },
          el('p', {}, `Suspected (${finding.suspicion.strength} evidence) because:`),
          suspicionList(finding.suspicion),
        ),
    finding.attempts.length >= finding.attemptsTotal
      ? null
      : el(
          'p',
          { class: 'subtle' },
          `Its first ${finding.attempts.length} attempts are shown here and on the timeline, ${moreText(finding.attempts.length, finding.attemptsTotal, 'attempt')}: every one is on the key's own page.`,
        ),
    attemptTable(
      finding.attempts,
      template,
      'Attempts of the selected key, client and server side, in time order',
    ),
  );
}

function alertsSection(detail: IncidentDetailJson): HTMLElement | null {
  if (detail.alerts.length === 0) return null;
  return el(
    'section',
    { class: 'alerts', 'aria-labelledby': 'alerts-title' },
    el('h2', { id: 'alerts-title' }, 'Alerts'),
    withChildren(
      el('ul', { class: 'plain-list' }),
      detail.alerts.map((alert) =>
        el(
          'li',
          {},
          `${alert.sink}: ${alert.delivered ? 'delivered' : `pending after ${alert.attempts} attempt${alert.attempts === 1 ? '' : 's'}`}`,
          alert.lastError === null ? '' : ` (last error: ${alert.lastError})`,
        ),
      ),
    ),
  );
}

/** Every attempt once per key: a key with two findings (two classes) carries the same attempts twice. */
function keyedAttempts(findings: readonly FindingJson[]): KeyedAttempt[] {
  const seen = new Set<string>();
  const result: KeyedAttempt[] = [];
  for (const finding of findings) {
    for (const attempt of finding.attempts as AttemptJson[]) {
      const id = `${finding.key}\u0000${attempt.traceId}\u0000${attempt.spanId}`;
      if (seen.has(id)) continue;
      seen.add(id);
      result.push({ key: finding.key, attempt });
    }
  }
  return result;
}

function routingEvents(detail: IncidentDetailJson): RoutingEventJson[] {
  const events = new Map<string, RoutingEventJson>();
  if (detail.routingEvent !== null) events.set(detail.routingEvent.id, detail.routingEvent);
  for (const finding of detail.findings) {
    const event = finding.routing.event;
    if (event !== null) events.set(event.id, event);
  }
  return [...events.values()];
}
