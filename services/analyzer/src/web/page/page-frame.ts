import type { UiConfig } from './api-types.ts';
import { el, keyHref, replaceChildren } from './element-builder.ts';
import { forgetToken, readToken } from './session-token.ts';
import { timeZoneName } from './time-format.ts';

/**
 * The parts of the shell every page shares: the main region, the notice (role=alert, for refusals
 * and failures), the session line in the header, and the document title.
 */

export function mainRegion(): HTMLElement {
  return document.getElementById('main')!;
}

export function setPageTitle(
  title: string,
  navigation: 'incidents' | 'scopes' | 'routing-events' | null,
): void {
  document.title = `${title} · keyscope`;
  for (const link of document.querySelectorAll<HTMLAnchorElement>('[data-nav]')) {
    if (link.dataset.nav === navigation) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

export type NoticeKind = 'error' | 'success';

export function showNotice(kind: NoticeKind, ...text: (string | Node)[]): void {
  const notice = document.getElementById('notice')!;
  notice.dataset.kind = kind;
  replaceChildren(
    notice,
    el('span', { class: 'notice-label' }, kind === 'error' ? 'Error: ' : 'Done: '),
    ...text,
    el('button', { type: 'button', class: 'notice-close', 'aria-label': 'Dismiss message' }, '×'),
  );
  notice.querySelector('.notice-close')!.addEventListener('click', clearNotice);
}

export function clearNotice(): void {
  const notice = document.getElementById('notice')!;
  delete notice.dataset.kind;
  notice.replaceChildren();
}

/** Who the page talks to the API as, and a way to drop a stored token. */
export function showSession(config: UiConfig | null): void {
  const session = document.getElementById('session')!;
  if (config === null) {
    session.replaceChildren();
    return;
  }
  const { name, role, tenant } = config.principal;
  const who =
    name === 'loopback'
      ? 'Open on loopback (no tokens configured)'
      : `Token ${name} · ${role === 'admin' ? 'admin' : 'read-only'}${tenant === null ? '' : ` · tenant ${tenant}`}`;
  replaceChildren(session, el('span', { class: 'session-who' }, who));
  if (readToken() !== null) {
    const forget = el('button', { type: 'button', class: 'link-button' }, 'Forget token');
    forget.addEventListener('click', () => {
      forgetToken();
      location.reload();
    });
    session.append(' ', forget);
  }
}

/**
 * The header's key search: Enter (or Go) opens that key's page. The value is taken exactly as
 * typed, spaces included, since a key is any string; the form's own GET to `/keys?key=` is what
 * happens without script.
 */
export function listenForKeySearch(): void {
  const form = document.getElementById('key-search') as HTMLFormElement | null;
  const input = document.getElementById('key-search-input') as HTMLInputElement | null;
  if (form === null || input === null) return;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (input.value === '') return;
    location.assign(keyHref(input.value));
  });
}

/** The key search shows the key of the page it is on, to edit or copy. */
export function showSearchedKey(key: string): void {
  const input = document.getElementById('key-search-input') as HTMLInputElement | null;
  if (input !== null) input.value = key;
}

export function pageFooter(): HTMLElement {
  return el(
    'footer',
    { class: 'page-footer' },
    `Times are local (${timeZoneName()}). Data from keyscope's API under `,
    el('code', {}, '/api/v1'),
    '.',
  );
}
