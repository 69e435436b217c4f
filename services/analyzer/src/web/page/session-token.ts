/**
 * The bearer token the user typed, kept for this tab only: sessionStorage dies with the tab, so a
 * token pasted at 3 a.m. does not linger in the browser profile.
 */
const STORAGE_KEY = 'keyscope.apiToken';

export function readToken(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string): void {
  sessionStorage.setItem(STORAGE_KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}
