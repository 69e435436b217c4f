import { el, withChildren } from './element-builder.ts';

/*
 * Store and node names as findings and incidents list them: the first ones, up to the detector's
 * cap (`detector.maxStoresPerFinding` / `maxStoresPerIncident`), and a total that counts them all.
 * What the list leaves out is said, never silently dropped: "and 188,950 more stores".
 */

/** `and 188,950 more stores`; '' when the list is whole. */
export function moreText(listed: number, total: number, noun: string): string {
  const more = total - listed;
  if (more <= 0) return '';
  return `and ${more.toLocaleString('en-US')} more ${noun}${more === 1 ? '' : 's'}`;
}

/** `a, b, c and 12 more stores`, or '—' for none. */
export function listedText(names: readonly string[], total: number, noun: string): string {
  const more = moreText(names.length, total, noun);
  if (names.length === 0) return more === '' ? '—' : more;
  return more === '' ? names.join(', ') : `${names.join(', ')} ${more}`;
}

/** The names as a list, the last item saying how many more there are. */
export function namesList(names: readonly string[], total: number, noun: string): HTMLElement {
  const list = withChildren(
    el('ul', { class: 'plain-list' }),
    names.map((name) => el('li', {}, el('code', {}, name))),
  );
  const more = moreText(names.length, total, noun);
  if (more !== '') list.append(el('li', { class: 'subtle', 'data-more': total - names.length }, more));
  return list;
}
