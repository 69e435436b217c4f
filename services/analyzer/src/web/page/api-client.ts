import type { ApiErrorJson } from './api-types.ts';
import { readToken } from './session-token.ts';

/** A refusal from the API (`{ error: { code, message } }`), or 0/KS_PAGE_UNREACHABLE without an answer. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function apiGet<T>(path: string): Promise<T> {
  return request<T>('GET', path);
}

export function apiPost<T>(path: string): Promise<T> {
  return request<T>('POST', path);
}

async function request<T>(method: 'GET' | 'POST', path: string): Promise<T> {
  // x-keyscope-client: without api.tokens the API refuses changes that lack it (or a JSON body),
  // because a page on another site cannot make a browser send it; the page sends it always.
  const headers: Record<string, string> = { accept: 'application/json', 'x-keyscope-client': 'web' };
  const token = readToken();
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let response: Response;
  try {
    response = await fetch(path, { method, headers, cache: 'no-store', credentials: 'omit' });
  } catch (error) {
    throw new ApiError(0, 'KS_PAGE_UNREACHABLE', `keyscope did not answer: ${(error as Error).message}`);
  }
  const body: unknown = await response.json().catch(() => null);
  if (response.ok) return body as T;
  const refusal = (body as Partial<ApiErrorJson> | null)?.error;
  throw new ApiError(
    response.status,
    typeof refusal?.code === 'string' ? refusal.code : `HTTP_${response.status}`,
    typeof refusal?.message === 'string' ? refusal.message : `the API answered ${response.status}`,
  );
}
