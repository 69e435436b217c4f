import type { AttemptJson } from './api-types.ts';
import { el } from './element-builder.ts';
import { stackedOnNarrowScreens } from './stacked-table.ts';
import { formatClock, formatDuration } from './time-format.ts';
import { traceLink } from './trace-link.ts';
import { OUTCOME_LABELS } from './vocabulary.ts';

/**
 * Every attempt of a key in time order, as text: the timeline's text alternative, and where trace
 * ids are shown whole (selectable in one click) to paste into the tracing UI, or followed through
 * `api.traceLinkTemplate`.
 */
export function attemptTable(
  attempts: readonly AttemptJson[],
  traceLinkTemplate: string,
  caption: string,
): HTMLTableElement {
  const sorted = [...attempts].sort((a, b) => Date.parse(a.start) - Date.parse(b.start));
  const first = sorted[0] === undefined ? 0 : Date.parse(sorted[0].start);
  const table = el(
    'table',
    { class: 'attempts' },
    el('caption', {}, caption),
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...['Time', 'Offset', 'Side', 'Where', 'Store or target', 'Outcome', 'Duration', 'Trace / span'].map(
          (heading) => el('th', { scope: 'col' }, heading),
        ),
      ),
    ),
    el(
      'tbody',
      {},
      sorted.map((attempt) =>
        el(
          'tr',
          {
            'data-kind': attempt.kind,
            class: attempt.kind === 'server' && attempt.outcome === 'miss' ? 'row-exec' : null,
          },
          el(
            'td',
            { title: attempt.start },
            el('time', { datetime: attempt.start }, formatClock(attempt.start)),
          ),
          el('td', { class: 'number' }, `+${formatDuration(Date.parse(attempt.start) - first)}`),
          el('td', {}, sideOf(attempt)),
          el(
            'td',
            {},
            attempt.service,
            el(
              'div',
              { class: 'subtle' },
              `node ${attempt.node || '(unknown)'}`,
              attempt.region === '' ? '' : ` · ${attempt.cluster} · ${attempt.region}`,
            ),
          ),
          el('td', { class: 'wrap-anywhere' }, storeOrTarget(attempt)),
          el('td', {}, outcomeOf(attempt)),
          el('td', { class: 'number' }, formatDuration(attempt.durationMillis)),
          el('td', {}, traceCell(attempt, traceLinkTemplate)),
        ),
      ),
    ),
  );
  return stackedOnNarrowScreens(table);
}

function sideOf(attempt: AttemptJson): string {
  if (attempt.kind === 'client') {
    // A send that carried no key (it timed out before its headers were recorded) is the key's
    // through the server span under it.
    const linked = attempt.keyFrom === 'child' ? ', key from its server span' : '';
    return `client send #${attempt.resendCount}${linked}`;
  }
  if (attempt.kind === 'arrival') return 'request on server';
  if (attempt.kind === 'effect') return 'side effect';
  return 'store check';
}

function storeOrTarget(attempt: AttemptJson): string {
  if (attempt.kind === 'server')
    return `${attempt.store}${attempt.scope === '' ? '' : ` (${attempt.scope} scope)`}`;
  if (attempt.kind === 'client') return attempt.target || '(unknown target)';
  return attempt.operation;
}

function outcomeOf(attempt: AttemptJson): Node | string {
  if (attempt.kind === 'server') {
    const outcome = el(
      'span',
      { class: `outcome outcome-text-${attempt.outcome}` },
      OUTCOME_LABELS[attempt.outcome],
    );
    return attempt.outcome === 'miss' && (attempt.failed || attempt.released)
      ? el('span', {}, outcome, ` · then failed${requestEnd(attempt)}`)
      : outcome;
  }
  if (attempt.kind === 'arrival') return attempt.failed ? `failed${requestEnd(attempt)}` : '—';
  if (attempt.kind === 'effect') return attempt.failed ? 'failed' : 'took place';
  if (attempt.kind === 'client') {
    if (attempt.error !== '')
      return `failed: ${attempt.error}${attempt.statusCode === 0 ? '' : ` (${attempt.statusCode})`}`;
    return attempt.statusCode === 0 ? 'no answer' : `HTTP ${attempt.statusCode}`;
  }
  return '—';
}

/** `(HTTP 503, key released, effect none)`: what a failed request's spans said. */
function requestEnd(attempt: { statusCode: number; released: boolean; effect: string }): string {
  const parts: string[] = [];
  if (attempt.statusCode !== 0) parts.push(`HTTP ${attempt.statusCode}`);
  if (attempt.released) parts.push('key released');
  if (attempt.effect !== '') parts.push(`effect ${attempt.effect}`);
  return parts.length === 0 ? '' : ` (${parts.join(', ')})`;
}

export function traceCell(attempt: { traceId: string; spanId: string }, template: string): HTMLElement {
  const link = traceLink(template, attempt.traceId, attempt.spanId);
  return el(
    'div',
    { class: 'trace' },
    el('code', { class: 'trace-id', title: 'trace id' }, attempt.traceId),
    el('code', { class: 'span-id subtle', title: 'span id' }, attempt.spanId),
    link === null
      ? null
      : el(
          'a',
          { href: link, target: '_blank', rel: 'noopener noreferrer', class: 'trace-link' },
          'open trace',
        ),
  );
}
