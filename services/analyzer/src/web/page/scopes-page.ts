import { apiGet } from './api-client.ts';
import type { ScopeOverflowJson, ScopeRowJson, ScopesJson, UiConfig } from './api-types.ts';
import { ensureGlyphDefinitions, RISK_PATTERN } from './attempt-glyphs.ts';
import { coverageWarningsOf } from './coverage-warnings.ts';
import { el, replaceChildren, svg } from './element-builder.ts';
import { describeRefusal } from './page-failure.ts';
import { mainRegion, pageFooter, setPageTitle, showNotice } from './page-frame.ts';

type SpreadLevel = ScopeRowJson['smallestCoveringScope'];
const SPREAD_LEVELS: readonly SpreadLevel[] = ['node', 'cluster', 'region', 'global'];

const STATUS_TEXT: Readonly<Record<ScopeRowJson['status'], string>> = {
  sound: '✓ Sound: the key scope covers every observed retry',
  narrower: '✕ Narrower than the retries: duplicates by construction',
  unknown: '? No key scope declared',
};

/** Tiers asked for at a time: the API's largest page. */
const PAGE_SIZE = 500;
/**
 * Rows the page shows at most, however many the API holds or answers with: the table stays a
 * table a browser draws in a moment, and past it the API pages through the rest.
 */
export const MAX_SHOWN_ROWS = 1_000;
/** The verdict of a scope the mapping declares for a service keyscope has heard nothing from. */
const UNSEEN_TEXT =
  '? No keyed span from this service yet: check its name in the mapping against service.name';

/** `/scopes`: per tier, the declared key scope against where retries of one key actually went. */
export async function renderScopesPage(config: UiConfig): Promise<void> {
  setPageTitle('Scope report', 'scopes');
  ensureGlyphDefinitions();
  let rows: ScopeRowJson[] = [];
  let nextCursor: string | null = null;
  let overflow: ScopeOverflowJson | null = null;
  let unshown = 0;
  const results = el('div', { class: 'results' });
  const more = el(
    'button',
    { type: 'button', class: 'secondary', hidden: true, id: 'scopes-more' },
    'Show more',
  );

  const load = async () => {
    const search = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (nextCursor !== null) search.set('cursor', nextCursor);
    const report = await apiGet<ScopesJson>(`/api/v1/scopes?${search}`);
    const room = MAX_SHOWN_ROWS - rows.length;
    rows = rows.concat(report.items.length > room ? report.items.slice(0, room) : report.items);
    unshown = Math.max(report.items.length - room, 0);
    nextCursor = report.nextCursor;
    overflow = report.overflow ?? null;
    draw();
  };

  const draw = () => {
    const sorted = [...rows].sort(
      (a, b) => b.keysAtRisk - a.keysAtRisk || a.service.localeCompare(b.service),
    );
    const full = rows.length >= MAX_SHOWN_ROWS;
    replaceChildren(
      results,
      coverageWarnings(sorted),
      sorted.length === 0
        ? el(
            'p',
            { class: 'empty' },
            config.principal.tenant !== null
              ? "The scope report aggregates every tenant's keys, so a tenant-scoped token does not see it."
              : 'No tier has reported a dedup decision yet.',
          )
        : scopeTable(sorted),
      full && (nextCursor !== null || unshown > 0)
        ? el(
            'p',
            { class: 'subtle', id: 'scopes-unshown' },
            `Showing the first ${MAX_SHOWN_ROWS.toLocaleString('en')} tiers; page through the rest with GET /api/v1/scopes.`,
          )
        : null,
      overflowNote(overflow),
    );
    more.hidden = nextCursor === null || full;
  };

  more.addEventListener('click', () => {
    load().catch((error) => showNotice('error', `loading more failed: ${describeRefusal(error)}`));
  });
  replaceChildren(
    mainRegion(),
    el('h1', {}, 'Scope report'),
    el(
      'p',
      { class: 'lede' },
      "A dedup key is effective only if its key scope covers every endpoint a retry of it can reach. Each tier (service and operation) below shows the scope its store declares, how far one key's attempts actually spread, and the smallest scope that would have held them all — the fix to make, rather than global by reflex.",
    ),
    results,
    more,
    pageFooter(),
  );
  await load();
}

/** The tiers past `detector.maxTiers`: how many, and what their keys did, summed. */
function overflowNote(overflow: ScopeOverflowJson | null): HTMLElement | null {
  if (overflow === null) return null;
  const tiers = overflow.tiers.toLocaleString('en');
  return el(
    'p',
    { class: 'subtle', id: 'scopes-overflow' },
    el('strong', {}, `and ${overflow.tiers < 200 ? '' : 'about '}${tiers} more tiers`),
    ` past detector.maxTiers, summed rather than shown one by one: ${overflow.keys.toLocaleString('en')} keys, ` +
      `${overflow.keysSpanning.nodes + overflow.keysSpanning.clusters + overflow.keysSpanning.regions} of them retried on another node or further. ` +
      "Their keys are judged for duplicates like any other. Many tiers usually means operations named by URL: see the mapping's collapseOperationIds.",
  );
}

function scopeTable(rows: ScopeRowJson[]): HTMLTableElement {
  return el(
    'table',
    { class: 'scopes', id: 'scopes' },
    el(
      'caption',
      { class: 'visually-hidden' },
      'Declared key scope against observed retry scope, per service and operation',
    ),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        [
          'Service',
          'Operation',
          'Declared key scope',
          'Where retries of one key landed',
          'Smallest covering scope',
          'Keys',
          'Keys at risk',
          'Verdict',
        ].map((heading) => el('th', { scope: 'col' }, heading)),
      ),
    ),
    el(
      'tbody',
      {},
      rows.map((row) =>
        el(
          'tr',
          { class: `scope-${row.status}` },
          el('th', { scope: 'row' }, row.service),
          el('td', { class: 'wrap-anywhere' }, row.operation),
          el('td', {}, el('strong', {}, row.declaredScope), scopeSource(row), declaredMix(row)),
          el('td', {}, spreadLadder(row)),
          el('td', {}, el('strong', {}, row.smallestCoveringScope)),
          el('td', { class: 'number' }, String(row.keys)),
          el('td', { class: 'number' }, row.keysAtRisk > 0 ? el('strong', {}, String(row.keysAtRisk)) : '0'),
          el(
            'td',
            { class: `verdict-cell verdict-${row.status}` },
            row.spansSeen ? STATUS_TEXT[row.status] : UNSEEN_TEXT,
          ),
        ),
      ),
    ),
  );
}

/** Tiers keyscope sees only part of (sampling, lost spans): their verdicts rest on a sample. */
function coverageWarnings(rows: ScopeRowJson[]): HTMLElement | null {
  const items = rows.flatMap((row) =>
    coverageWarningsOf(row).map((warning) =>
      el('li', {}, el('strong', {}, `${row.service} ${row.operation}`), `: ${warning}`),
    ),
  );
  if (items.length === 0) return null;
  return el(
    'section',
    { class: 'coverage-warnings', id: 'coverage-warnings' },
    el('h2', {}, 'Evidence coverage'),
    el('ul', {}, items),
  );
}

/** Where the scope comes from, when not from the spans themselves. */
function scopeSource(row: ScopeRowJson): HTMLElement | null {
  return row.scopeFrom === 'mapping' ? el('div', { class: 'subtle' }, 'declared in the mapping') : null;
}

/** Instances of one tier that declare different scopes are a finding in themselves. */
function declaredMix(row: ScopeRowJson): HTMLElement | null {
  const entries = Object.entries(row.declaredCounts);
  if (entries.length < 2) return null;
  return el(
    'div',
    { class: 'subtle' },
    `mixed: ${entries.map(([scope, count]) => `${scope} ${count}`).join(', ')}`,
  );
}

/** Keys whose attempts stayed within each level; 'node' means one node held all of a key's attempts. */
function spreadCounts(row: ScopeRowJson): Record<SpreadLevel, number> {
  const { nodes, clusters, regions } = row.keysSpanning;
  return {
    node: Math.max(row.keys - nodes - clusters - regions, 0),
    cluster: nodes,
    region: clusters,
    global: regions,
  };
}

function covers(declared: ScopeRowJson['declaredScope'], level: SpreadLevel): boolean {
  if (declared === 'unknown') return false;
  if (declared === 'tenant' || declared === 'global') return true;
  return SPREAD_LEVELS.indexOf(declared) >= SPREAD_LEVELS.indexOf(level);
}

/**
 * One small bar per level: how many keys' retries spread that far. Bars beyond the declared scope
 * are hatched and say "at risk"; the declared and covering levels are named in text.
 */
function spreadLadder(row: ScopeRowJson): SVGSVGElement {
  const counts = spreadCounts(row);
  const trackWidth = 140;
  const rowHeight = 18;
  const ladder = svg('svg', {
    class: 'ladder',
    width: 380,
    height: rowHeight * SPREAD_LEVELS.length + 2,
    viewBox: `0 0 380 ${rowHeight * SPREAD_LEVELS.length + 2}`,
    role: 'img',
    'aria-label': SPREAD_LEVELS.map((level) => `${level}: ${counts[level]} keys`).join(', '),
  });
  SPREAD_LEVELS.forEach((level, index) => {
    const y = index * rowHeight + 1;
    const count = counts[level];
    const covered = covers(row.declaredScope, level);
    const width = count === 0 ? 0 : Math.max(6, (count / Math.max(row.keys, 1)) * trackWidth);
    const tags = [
      row.declaredScope === level ? 'declared' : '',
      row.smallestCoveringScope === level ? 'covers all' : '',
      !covered && count > 0 && row.declaredScope !== 'unknown' ? 'at risk' : '',
    ].filter((tag) => tag !== '');
    ladder.append(
      svg('text', { x: 0, y: y + 13, class: 'ladder-level' }, level),
      svg('rect', { x: 60, y: y + 3, width: trackWidth, height: 11, class: 'ladder-track' }),
      svg('rect', {
        x: 60,
        y: y + 3,
        width,
        height: 11,
        class: covered ? 'ladder-bar' : 'ladder-bar ladder-bar-risk',
        fill: covered ? null : `url(#${RISK_PATTERN})`,
      }),
      svg('text', { x: 60 + trackWidth + 8, y: y + 13, class: 'ladder-count' }, String(count)),
      svg('text', { x: 60 + trackWidth + 56, y: y + 13, class: 'ladder-tags' }, tags.join(' · ')),
    );
  });
  return ladder;
}
