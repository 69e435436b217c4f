import type { ApiError } from './api-client.ts';
import { el, replaceChildren } from './element-builder.ts';
import { mainRegion, setPageTitle } from './page-frame.ts';
import { forgetToken, readToken, saveToken } from './session-token.ts';

/**
 * Shown when the API answers 401: asks for a bearer token, keeps it in sessionStorage, and runs
 * `retry` (the page that was refused) with it.
 */
export function promptForToken(refusal: ApiError, retry: () => void): void {
  const hadToken = readToken() !== null;
  if (hadToken) forgetToken();
  setPageTitle('Token needed', null);
  const input = el('input', {
    id: 'api-token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    minlength: 1,
    'aria-describedby': 'token-help',
  });
  const form = el(
    'form',
    { class: 'token-form', 'aria-labelledby': 'token-title' },
    el('h1', { id: 'token-title' }, 'This keyscope needs an API token'),
    el(
      'p',
      { id: 'token-help' },
      hadToken
        ? `The API refused the stored token (${refusal.message}). Paste another one.`
        : "Paste a bearer token from keyscope's api.tokens. A read token shows incidents; acknowledging and resolving need an admin token. The token stays in this browser tab only.",
    ),
    el('label', { for: 'api-token' }, 'API token'),
    input,
    el('button', { type: 'submit', class: 'primary' }, 'Use token'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (token === '') return;
    saveToken(token);
    retry();
  });
  replaceChildren(mainRegion(), form);
  input.focus();
}
