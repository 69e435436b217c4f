import { apiGet } from './api-client.ts';
import type { FindingClass, IncidentJson, ListJson, UiConfig } from './api-types.ts';
import { severityBadge, statusBadge } from './badges.ts';
import { el, pageHref, replaceChildren } from './element-builder.ts';
import { incidentActions } from './incident-actions.ts';
import { describeRefusal } from './page-failure.ts';
import { mainRegion, pageFooter, setPageTitle, showNotice } from './page-frame.ts';
import { stackedOnNarrowScreens } from './stacked-table.ts';
import { formatAgo, formatClock, formatDateTime } from './time-format.ts';
import { CLASS_LABELS, FINDING_CLASSES, ROUTING_LABELS } from './vocabulary.ts';

const REFRESH_MILLIS = 10_000;
const PAGE_SIZE = 100;
const MAX_PAGE_SIZE = 500;

const WINDOWS = {
  any: { label: 'Any time', millis: null },
  '1h': { label: 'Last hour', millis: 3_600_000 },
  '6h': { label: 'Last 6 hours', millis: 6 * 3_600_000 },
  '24h': { label: 'Last 24 hours', millis: 24 * 3_600_000 },
  '7d': { label: 'Last 7 days', millis: 7 * 24 * 3_600_000 },
} as const;
type Window = keyof typeof WINDOWS;

/** The list's filters, kept in the URL so a filtered view can be shared and survives a reload. */
interface Filters {
  status: 'open' | 'resolved' | 'any';
  class: FindingClass | '';
  service: string;
  window: Window;
}

function readFilters(search: URLSearchParams): Filters {
  const status = search.get('status');
  const findingClass = search.get('class') ?? '';
  const window = search.get('window') ?? 'any';
  return {
    status: status === 'resolved' || status === 'any' ? status : 'open',
    class: (FINDING_CLASSES as string[]).includes(findingClass) ? (findingClass as FindingClass) : '',
    service: search.get('service') ?? '',
    window: Object.hasOwn(WINDOWS, window) ? (window as Window) : 'any',
  };
}

function writeFilters(filters: Filters): void {
  const search = new URLSearchParams();
  if (filters.status !== 'open') search.set('status', filters.status);
  if (filters.class !== '') search.set('class', filters.class);
  if (filters.service !== '') search.set('service', filters.service);
  if (filters.window !== 'any') search.set('window', filters.window);
  const query = search.toString();
  history.replaceState(null, '', query === '' ? '/' : `/?${query}`);
}

function apiQuery(filters: Filters, cursor: string | null, limit: number): string {
  const search = new URLSearchParams({ limit: String(limit) });
  if (filters.status !== 'any') search.set('status', filters.status);
  if (filters.class !== '') search.set('class', filters.class);
  if (filters.service.trim() !== '') search.set('service', filters.service.trim());
  const millis = WINDOWS[filters.window].millis;
  if (millis !== null) search.set('since', new Date(Date.now() - millis).toISOString());
  if (cursor !== null) search.set('cursor', cursor);
  return `/api/v1/incidents?${search}`;
}

/** `/`: incidents, open first, with filters, counts, actions, and a refresh every 10 s. */
export async function renderIncidentsPage(config: UiConfig): Promise<void> {
  setPageTitle('Incidents', 'incidents');
  const filters = readFilters(new URLSearchParams(location.search));
  let items: IncidentJson[] = [];
  let nextCursor: string | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const counts = el('p', { class: 'counts', id: 'incident-counts' });
  const results = el('div', { class: 'results' });
  const updated = el('span', { class: 'updated' });
  const autoRefresh = el('input', { type: 'checkbox', id: 'auto-refresh', checked: true });
  const more = el('button', { type: 'button', class: 'secondary', hidden: true }, 'Show more');

  const load = async (append: boolean) => {
    // A refresh reloads as many rows as are shown, so "Show more" survives it (the API caps at 500).
    const limit = append ? PAGE_SIZE : Math.min(Math.max(PAGE_SIZE, items.length), MAX_PAGE_SIZE);
    const page = await apiGet<ListJson<IncidentJson>>(apiQuery(filters, append ? nextCursor : null, limit));
    items = append ? [...items, ...page.items] : page.items;
    nextCursor = page.nextCursor;
    draw();
    updated.textContent = `Updated ${formatClock(new Date().toISOString(), false)}`;
  };

  const draw = () => {
    // A redraw replaces the table; keep keyboard focus on the same control if it survives.
    const focused = document.activeElement as HTMLElement | null;
    const focusKey =
      focused?.dataset.action === undefined ? null : [focused.dataset.action, focused.dataset.incident];
    replaceChildren(counts, ...describeCounts(items, nextCursor !== null));
    replaceChildren(results, items.length === 0 ? emptyState(filters) : incidentTable(config, items, reload));
    more.hidden = nextCursor === null;
    fillServiceSuggestions(form, items);
    if (focusKey !== null) {
      for (const button of results.querySelectorAll<HTMLButtonElement>('button[data-action]')) {
        if (button.dataset.action === focusKey[0] && button.dataset.incident === focusKey[1]) button.focus();
      }
    }
  };

  const schedule = () => {
    clearTimeout(timer);
    if (autoRefresh.checked) timer = setTimeout(() => void refresh(), REFRESH_MILLIS);
  };
  const refresh = async () => {
    try {
      await load(false);
    } catch (error) {
      showNotice('error', `refreshing the incidents failed: ${describeRefusal(error)}`);
    }
    schedule();
  };
  const reload = () => void refresh();

  const form = filterForm(filters, () => {
    writeFilters(filters);
    items = [];
    reload();
  });
  autoRefresh.addEventListener('change', schedule);
  more.addEventListener('click', () => {
    load(true).catch((error) => showNotice('error', `loading more failed: ${describeRefusal(error)}`));
  });

  await load(false);
  replaceChildren(
    mainRegion(),
    el('h1', {}, 'Incidents'),
    form,
    el(
      'div',
      { class: 'list-status' },
      counts,
      el(
        'span',
        { class: 'refresh' },
        autoRefresh,
        el('label', { for: 'auto-refresh' }, 'Auto-refresh (10 s)'),
        ' ',
        updated,
      ),
    ),
    results,
    more,
    pageFooter(),
  );
  schedule();
  addEventListener('pagehide', () => clearTimeout(timer));
}

function filterForm(filters: Filters, changed: () => void): HTMLFormElement {
  const select = <T extends string>(
    id: string,
    label: string,
    value: T,
    options: [T, string][],
    set: (v: T) => void,
  ) => {
    const element = el(
      'select',
      { id, name: id },
      ...options.map(([optionValue, text]) =>
        el('option', { value: optionValue, selected: optionValue === value }, text),
      ),
    );
    element.addEventListener('change', () => {
      set(element.value as T);
      changed();
    });
    return el('div', { class: 'field' }, el('label', { for: id }, label), element);
  };
  const service = el('input', {
    id: 'filter-service',
    name: 'service',
    type: 'search',
    value: filters.service,
    list: 'service-suggestions',
    autocomplete: 'off',
    placeholder: 'any service',
  });
  service.addEventListener('change', () => {
    filters.service = service.value;
    changed();
  });
  const form = el(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter incidents' },
    select(
      'filter-status',
      'Status',
      filters.status,
      [
        ['open', 'Open'],
        ['resolved', 'Resolved'],
        ['any', 'Any status'],
      ],
      (v) => (filters.status = v),
    ),
    select(
      'filter-class',
      'Class',
      filters.class,
      [['', 'Any class'], ...FINDING_CLASSES.map((c): [FindingClass, string] => [c, CLASS_LABELS[c]])],
      (v) => (filters.class = v),
    ),
    el(
      'div',
      { class: 'field' },
      el('label', { for: 'filter-service' }, 'Service'),
      service,
      el('datalist', { id: 'service-suggestions' }),
    ),
    select(
      'filter-window',
      // The API's `since` matches incidents with a finding since then: active, not merely opened.
      'Active',
      filters.window,
      (Object.keys(WINDOWS) as Window[]).map((w): [Window, string] => [w, WINDOWS[w].label]),
      (v) => (filters.window = v),
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    filters.service = service.value;
    changed();
  });
  return form;
}

function fillServiceSuggestions(form: HTMLFormElement, items: IncidentJson[]): void {
  const list = form.querySelector('datalist');
  if (list === null) return;
  const services = [...new Set(items.map((incident) => incident.service))].sort();
  replaceChildren(
    list,
    services.map((service) => el('option', { value: service })),
  );
}

function describeCounts(items: IncidentJson[], more: boolean): (string | Node)[] {
  const open = items.filter((incident) => incident.status === 'open');
  const acknowledged = open.filter((incident) => incident.acknowledged).length;
  const keys = items.reduce((sum, incident) => sum + incident.keys, 0);
  const critical = items.filter((incident) => incident.severity === 'critical').length;
  const shown = `${items.length}${more ? '+' : ''}`;
  return [
    el('strong', {}, `${shown} incident${items.length === 1 ? '' : 's'}`),
    ` · ${open.length} open (${open.length - acknowledged} unacknowledged) · ${critical} critical · ${keys} key${keys === 1 ? '' : 's'} affected`,
  ];
}

function emptyState(filters: Filters): HTMLElement {
  return el(
    'p',
    { class: 'empty' },
    filters.status === 'open'
      ? 'No open incidents match these filters. Nothing has run twice that keyscope has seen.'
      : 'No incidents match these filters.',
  );
}

function incidentTable(config: UiConfig, items: IncidentJson[], changed: () => void): HTMLTableElement {
  const now = Date.now();
  // Open first (unacknowledged before acknowledged), then newest: what needs a human comes first.
  const rank = (incident: IncidentJson) => (incident.status !== 'open' ? 2 : incident.acknowledged ? 1 : 0);
  const sorted = [...items].sort(
    (a, b) => rank(a) - rank(b) || Date.parse(b.lastFindingAt) - Date.parse(a.lastFindingAt),
  );
  const table = el(
    'table',
    { class: 'incidents', id: 'incidents' },
    el('caption', { class: 'visually-hidden' }, 'Incidents, open first'),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...['Severity', 'Incident', 'Keys', 'Stores', 'Opened', 'Status', 'Actions'].map((heading) =>
          el('th', { scope: 'col' }, heading),
        ),
      ),
    ),
    el(
      'tbody',
      {},
      sorted.map((incident) =>
        el(
          'tr',
          { 'data-incident': incident.id },
          el('td', {}, severityBadge(incident.severity)),
          el(
            'td',
            { class: 'incident-title' },
            el('a', { href: pageHref('incidents', incident.id), class: 'incident-link' }, incident.title),
            el(
              'div',
              { class: 'subtle' },
              `${CLASS_LABELS[incident.class]} · ${incident.service} ${incident.operation}`,
              incident.routingEvent === null ? '' : ` · ${ROUTING_LABELS[incident.routingEvent.type]}`,
            ),
          ),
          el('td', { class: 'number' }, String(incident.keys)),
          el('td', { class: 'number' }, String(incident.stores.length)),
          el(
            'td',
            { title: incident.openedAt },
            el('time', { datetime: incident.openedAt }, formatDateTime(incident.openedAt)),
            el('div', { class: 'subtle' }, formatAgo(incident.openedAt, now)),
          ),
          el(
            'td',
            {},
            statusBadge(incident),
            incident.acknowledgedBy === null
              ? null
              : el('div', { class: 'subtle' }, `by ${incident.acknowledgedBy}`),
          ),
          el('td', {}, incidentActions(config, incident, changed)),
        ),
      ),
    ),
  );
  return stackedOnNarrowScreens(table);
}
