import { type EvidenceGap, evidenceGapsOf } from '@keyscope/detector/evidence-gaps';
import { apiGet } from './api-client.ts';
import type { FindingJson, KeyLookupJson, RoutingEventJson, UiConfig } from './api-types.ts';
import { attemptTable } from './attempt-table.ts';
import { severityBadge } from './badges.ts';
import { el, pageHref, replaceChildren, withChildren } from './element-builder.ts';
import { listedText } from './listed-names.ts';
import { mainRegion, pageFooter, setPageTitle, showSearchedKey } from './page-frame.ts';
import { suspicionList } from './suspicion-list.ts';
import { formatDateTime, formatDuration } from './time-format.ts';
import { timelineLegend } from './timeline-legend.ts';
import { showTimeline } from './timeline-view.ts';
import { CAUSE_LABELS, CLASS_LABELS, RETRIED_BY_LABELS } from './vocabulary.ts';

/** `/keys/:key`: did this key run twice? Every attempt, client and server side, and its findings. */
export async function renderKeyPage(config: UiConfig, key: string): Promise<void> {
  const lookup = await apiGet<KeyLookupJson>(`/api/v1/keys/${encodeURIComponent(key)}`);
  setPageTitle(`Key ${key}`, null);
  showSearchedKey(key);

  const figure = el('figure', { class: 'timeline-figure' });
  replaceChildren(
    mainRegion(),
    el('p', { class: 'breadcrumb' }, el('a', { href: '/' }, '← All incidents')),
    el('h1', { class: 'wrap-anywhere' }, 'Key ', el('code', { id: 'key-value' }, lookup.key)),
    verdict(lookup),
    evidenceGaps(lookup),
    lookup.findings.length === 0
      ? null
      : withChildren(
          el(
            'section',
            { 'aria-labelledby': 'findings-title' },
            el('h2', { id: 'findings-title' }, `Findings (${lookup.findings.length})`),
          ),
          lookup.findings.map((finding) => findingCard(finding)),
        ),
    lookup.attempts.length === 0
      ? null
      : el(
          'section',
          { class: 'timeline-section', 'aria-labelledby': 'timeline-title' },
          el('h2', { id: 'timeline-title' }, 'Attempts over time'),
          timelineLegend(),
          figure,
        ),
    lookup.attempts.length === 0
      ? el(
          'p',
          { class: 'empty' },
          'keyscope holds no attempt of this key: it was never seen, or it is older than the retry horizon.',
        )
      : attemptTable(
          lookup.attempts,
          config.traceLinkTemplate,
          `Every attempt of this key, client and server side, in time order (${lookup.attempts.length})`,
        ),
    pageFooter(),
  );

  if (lookup.attempts.length > 0) {
    const events = new Map<string, RoutingEventJson>();
    for (const finding of lookup.findings)
      if (finding.routing.event !== null) events.set(finding.routing.event.id, finding.routing.event);
    const timeline = showTimeline(figure, {
      attempts: lookup.attempts.map((attempt) => ({ key: lookup.key, attempt })),
      events: [...events.values()],
    });
    timeline.select(lookup.key);
  }
}

function verdict(lookup: KeyLookupJson): HTMLElement {
  if (!lookup.seen) {
    const reach =
      lookup.evidenceSince === null
        ? 'keyscope holds no attempts of any key yet.'
        : `keyscope's evidence reaches back to ${formatDateTime(lookup.evidenceSince)}; older attempts are no longer kept.`;
    return el(
      'p',
      { class: 'verdict verdict-unknown', id: 'verdict' },
      el('strong', {}, 'Never seen. '),
      `No span with this key reached keyscope, so it cannot say whether it ran: ${reach}`,
    );
  }
  const unconfirmed =
    lookup.unconfirmedExecutions > 0
      ? `, and ${lookup.unconfirmedExecutions} admitted ${lookup.unconfirmedExecutions === 1 ? 'attempt' : 'attempts'} that failed with an unknown effect`
      : '';
  const times = `${lookup.executions} execution${lookup.executions === 1 ? '' : 's'}${unconfirmed}`;
  if (lookup.ranTwice) {
    return el(
      'p',
      { class: 'verdict verdict-bad', id: 'verdict' },
      el('strong', {}, '✕ Ran more than once. '),
      `${times} of this key.`,
    );
  }
  if (lookup.findings.length > 0) {
    return el(
      'p',
      { class: 'verdict verdict-warn', id: 'verdict' },
      el('strong', {}, '! Did not run twice, but see the findings. '),
      `${times}.`,
    );
  }
  return el(
    'p',
    { class: 'verdict verdict-good', id: 'verdict' },
    el('strong', {}, '✓ No duplicate execution found. '),
    `${times}.`,
  );
}

/**
 * What keyscope cannot see of this key, from its attempts alone: the verdict above rests on the
 * attempts that reached it, and a sampled or lost one may have executed.
 */
function evidenceGaps(lookup: KeyLookupJson): HTMLElement | null {
  const gaps = evidenceGapsOf(lookup.attempts);
  if (gaps.length === 0) return null;
  return el(
    'section',
    { class: 'evidence-gaps', id: 'evidence-gaps', 'aria-labelledby': 'evidence-gaps-title' },
    el('h2', { id: 'evidence-gaps-title' }, 'Evidence incomplete'),
    el(
      'p',
      {},
      'Some attempts of this key did not reach keyscope (sampling, or spans lost with a process), so it may have run more often than shown:',
    ),
    withChildren(
      el('ul'),
      gaps.map((gap) => el('li', {}, evidenceGapText(gap))),
    ),
  );
}

function evidenceGapText(gap: EvidenceGap): string {
  switch (gap.kind) {
    case 'send_without_server_span':
      return `client send #${gap.resendCount}${gap.target === '' ? '' : ` to ${gap.target}`} has no server span under it (span ${gap.traceId}/${gap.spanId})`;
    case 'arrival_without_decision':
      return `a request reached the server with no dedup decision recorded under it (span ${gap.traceId}/${gap.spanId})`;
    case 'resend_gap': {
      const plural = gap.missing.length === 1 ? 'send' : 'sends';
      return `${plural} #${gap.missing.join(', #')}${gap.target === '' ? '' : ` to ${gap.target}`} never reached keyscope (it holds #${gap.seen.join(', #')})`;
    }
  }
}

/** The time from the first run's end to the repeat's start; negative when they overlapped. */
function idleText(idleMillis: number): string {
  return idleMillis < 0
    ? `overlapping by ${formatDuration(-idleMillis)}`
    : `${formatDuration(idleMillis)} after the first run ended`;
}

/** The caller's wait against the first execution: context for why the key was sent again. */
function retryTimingText(finding: FindingJson): string {
  const wait = finding.callerWaitMillis;
  const ran = finding.firstExecutionMillis;
  if (wait === null && ran === null) return '—';
  const parts: string[] = [];
  parts.push(wait === null ? 'caller’s wait unknown' : `caller gave up after ${formatDuration(wait)}`);
  if (ran !== null)
    parts.push(
      finding.firstExecutionClipped
        ? `first execution ran ${formatDuration(ran)} at least: until the caller left, where its span ended`
        : `first execution ran ${formatDuration(ran)}`,
    );
  if (finding.outlivedCallerWait !== null && !finding.firstExecutionClipped)
    parts.push(finding.outlivedCallerWait ? 'it outlived the wait' : 'it ended within the wait');
  return parts.join('; ');
}

function findingCard(finding: FindingJson): HTMLElement {
  const event = finding.routing.event;
  const row = (term: string, ...value: (string | Node | null)[]) => [
    el('dt', {}, term),
    el('dd', {}, ...value),
  ];
  return el(
    'article',
    { class: 'finding' },
    el(
      'h3',
      {},
      severityBadge(finding.severity),
      ' ',
      CLASS_LABELS[finding.class],
      finding.cause === null ? '' : ` — ${CAUSE_LABELS[finding.cause]}`,
    ),
    el(
      'dl',
      { class: 'facts' },
      ...row('Where', `${finding.service} ${finding.operation}`),
      ...row('Executions', String(finding.executions)),
      ...row('Stores', listedText(finding.stores, finding.storesTotal, 'store')),
      ...row('Nodes', listedText(finding.nodes, finding.nodesTotal, 'node')),
      ...row('Tenants', finding.tenants.join(', ') || '—'),
      ...row(
        'Gap between starts',
        finding.gapMillis === null ? '—' : formatDuration(finding.gapMillis),
        finding.idleMillis === null ? '' : ` (${idleText(finding.idleMillis)})`,
      ),
      ...row('Retry timing', retryTimingText(finding)),
      ...row('Retried by', RETRIED_BY_LABELS[finding.retriedBy]),
      ...row(
        'Affinity',
        finding.routing.affinityBroken ? 'broken: attempts landed on different nodes' : 'held',
      ),
      ...row('Routing event', event === null ? 'none overlapping' : event.description),
      ...(finding.suspicion === null ? [] : row('Suspected because', suspicionList(finding.suspicion))),
      ...row('Seen', `${formatDateTime(finding.firstSeen)} – ${formatDateTime(finding.lastSeen)}`),
      ...row('Incident', el('a', { href: pageHref('incidents', finding.incidentId) }, finding.incidentId)),
    ),
  );
}
