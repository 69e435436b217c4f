import { ApiError } from './api-client.ts';
import { el, replaceChildren } from './element-builder.ts';
import { mainRegion, setPageTitle, showNotice } from './page-frame.ts';
import { promptForToken } from './token-prompt.ts';

/** What a refusal reads as on the page: the API's message and its code, for a bug report. */
export function describeRefusal(error: unknown): string {
  if (error instanceof ApiError) return `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * A page that could not load: 401 asks for a token and retries; anything else replaces the page
 * with what went wrong, since a half-drawn incident is worse than none.
 */
export function showPageFailure(error: unknown, retry: () => void): void {
  if (error instanceof ApiError && error.status === 401) {
    promptForToken(error, retry);
    return;
  }
  const notFound = error instanceof ApiError && error.status === 404;
  setPageTitle(notFound ? 'Not found' : 'Failed to load', null);
  const again = el('button', { type: 'button' }, 'Try again');
  again.addEventListener('click', retry);
  replaceChildren(
    mainRegion(),
    el('h1', {}, notFound ? 'Not found' : 'The page could not load'),
    el('p', {}, describeRefusal(error)),
    el('p', {}, el('a', { href: '/' }, 'All incidents'), ' · ', again),
  );
  if (!notFound) showNotice('error', describeRefusal(error));
}
