import { apiGet } from './api-client.ts';
import type { ListJson, RoutingEventJson, RoutingEventListJson, UiConfig } from './api-types.ts';
import { el, pageHref, replaceChildren } from './element-builder.ts';
import { describeRefusal } from './page-failure.ts';
import { mainRegion, pageFooter, setPageTitle, showNotice } from './page-frame.ts';
import { stackedOnNarrowScreens } from './stacked-table.ts';
import { formatDateTime, formatDuration } from './time-format.ts';
import { ROUTING_LABELS } from './vocabulary.ts';

const PAGE_SIZE = 50;

/**
 * `/routing-events`: what keyscope inferred from the spans' routing (a node down, a failover, an
 * error or latency spike), newest first, each with its window and the incidents it explains, so
 * that "did keyscope see the brownout?" has an answer even when nothing ran twice during it.
 * `?service=` narrows it to one service; `?event=` marks one event (the incident page links so).
 */
export async function renderRoutingEventsPage(config: UiConfig): Promise<void> {
  setPageTitle('Routing events', 'routing-events');
  const search = new URLSearchParams(location.search);
  const service = search.get('service') ?? '';
  const marked = search.get('event');
  let nextCursor: string | null = null;

  const body = el('tbody', {});
  const table = eventTable(body);
  const more = el('button', { type: 'button', class: 'secondary', hidden: true }, 'Show more');
  const load = async () => {
    const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (service !== '') query.set('service', service);
    if (nextCursor !== null) query.set('cursor', nextCursor);
    const page = await apiGet<ListJson<RoutingEventListJson>>(`/api/v1/routing-events?${query}`);
    for (const event of page.items) body.append(eventRow(event, event.id === marked));
    // One card per row on a phone, rows shown by "Show more" too.
    stackedOnNarrowScreens(table);
    nextCursor = page.nextCursor;
    more.hidden = nextCursor === null;
  };
  more.addEventListener('click', () => {
    load().catch((error) => showNotice('error', `loading more failed: ${describeRefusal(error)}`));
  });

  await load();
  replaceChildren(
    mainRegion(),
    el('h1', {}, 'Routing events'),
    el(
      'p',
      { class: 'lede' },
      'Changes in routing keyscope inferred from the spans themselves: a node that stopped serving while the rest of its service went on, a cluster or region that failed over, a node whose requests failed or slowed down. Each is a claim to check against your own dashboards; an incident grouped under one says which retries it sent elsewhere.',
    ),
    service === ''
      ? null
      : el(
          'p',
          { class: 'subtle' },
          `Events of ${service}. `,
          el('a', { href: '/routing-events' }, 'All services'),
        ),
    body.childElementCount === 0 ? emptyState(config, service) : table,
    more,
    pageFooter(),
  );
  body.querySelector('tr.marked')?.scrollIntoView({ block: 'center' });
}

/** Where the incident page's routing event links: this page, narrowed to the event's service. */
export function routingEventHref(event: Pick<RoutingEventJson, 'id' | 'service'>): string {
  return `${pageHref('routing-events')}?${new URLSearchParams({ service: event.service, event: event.id })}`;
}

function eventTable(body: HTMLTableSectionElement): HTMLTableElement {
  const headings = el('tr', {});
  for (const heading of ['Event', 'Where', 'Window', 'What keyscope saw', 'Incidents'])
    headings.append(el('th', { scope: 'col' }, heading));
  return el(
    'table',
    { class: 'routing-events', id: 'routing-events' },
    el('caption', { class: 'visually-hidden' }, 'Routing events, newest first'),
    el('thead', {}, headings),
    body,
  );
}

function eventRow(event: RoutingEventListJson, marked: boolean): HTMLTableRowElement {
  const incidents = el('td', { class: 'event-incidents' });
  if (event.incidentIds.length === 0) incidents.append(el('span', { class: 'subtle' }, 'none'));
  for (const id of event.incidentIds) {
    incidents.append(el('a', { href: pageHref('incidents', id), class: 'incident-link' }, id), ' ');
  }
  return el(
    'tr',
    { class: marked ? 'marked' : null, 'aria-current': marked ? 'true' : null, 'data-event': event.id },
    el('th', { scope: 'row' }, ROUTING_LABELS[event.type]),
    el('td', { class: 'wrap-anywhere' }, event.service, el('div', { class: 'subtle' }, placeOf(event))),
    el('td', {}, ...windowOf(event)),
    el('td', { class: 'event-description' }, event.description),
    incidents,
  );
}

/** The node, or the cluster or region a failover took down. */
function placeOf(event: RoutingEventJson): string {
  if (event.type === 'region_failover') return `region ${event.region}`;
  if (event.type === 'cluster_failover') return `cluster ${event.cluster} (${event.region})`;
  return `node ${event.node}`;
}

function windowOf(event: RoutingEventJson): (Node | string)[] {
  const lasted = formatDuration(Date.parse(event.end) - Date.parse(event.start));
  return [
    el('time', { datetime: event.start }, formatDateTime(event.start)),
    ' – ',
    el('time', { datetime: event.end }, formatDateTime(event.end)),
    el('div', { class: 'subtle' }, event.ended ? lasted : `${lasted} so far, still open`),
  ];
}

function emptyState(config: UiConfig, service: string): HTMLElement {
  const where = service === '' ? '' : ` in ${service}`;
  return el(
    'p',
    { class: 'empty' },
    config.principal.tenant === null
      ? `keyscope has inferred no routing event${where}: no node stopped serving, failed or slowed down while the rest of its service went on.`
      : `No routing event${where} of a service where tenant ${config.principal.tenant} has a finding.`,
  );
}
