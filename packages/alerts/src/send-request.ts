import { parseRetryAfter } from './retry-backoff.ts';
import type { SinkRequest } from './sink-request.ts';

/**
 * How one attempt ended, in the outbox's terms: delivered (2xx); retry (the sink is down,
 * overloaded or slow: network errors, timeouts, 5xx, 408, 425, 429); abandon (the sink refused the
 * request and would refuse it again: other 4xx, and redirects, which a POST must not follow).
 */
export type SendResult =
  | { outcome: 'delivered'; status: number }
  | { outcome: 'retry'; error: string; retryAfterMillis: number | null }
  | { outcome: 'abandon'; error: string };

export interface SendOptions {
  fetch: typeof fetch;
  /** The whole exchange, body included, is aborted after this long. */
  timeoutMillis: number;
  nowUnixMillis: () => number;
  /** Aborts the exchange before its timeout (the alerter stopping). */
  signal?: AbortSignal;
}

/** Keeps a recorded error readable: sinks answer with whole HTML pages. */
const ERROR_BODY_MAX_CHARS = 300;

const RETRYABLE_STATUS = new Set([408, 425, 429]);

/** POSTs the request; never throws (every failure is a SendResult). */
export async function sendRequest(request: SinkRequest, options: SendOptions): Promise<SendResult> {
  let response: Response;
  // One signal for the whole exchange, body included: a sink that sends headers and then stalls
  // must not hold the delivery pass.
  const timeout = AbortSignal.timeout(options.timeoutMillis);
  const signal = options.signal === undefined ? timeout : AbortSignal.any([timeout, options.signal]);
  try {
    response = await options.fetch(request.url, {
      method: 'POST',
      headers: request.headers,
      body: JSON.stringify(request.body),
      redirect: 'manual',
      signal,
    });
  } catch (error) {
    return { outcome: 'retry', error: describeFailure(error, options), retryAfterMillis: null };
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    return { outcome: 'retry', error: describeFailure(error, options), retryAfterMillis: null };
  }
  const status = response.status;
  if (status >= 200 && status < 300) return { outcome: 'delivered', status };
  const error = `HTTP ${status}${text.trim() === '' ? '' : `: ${oneLine(text)}`}`;
  if (status >= 500 || RETRYABLE_STATUS.has(status)) {
    return {
      outcome: 'retry',
      error,
      retryAfterMillis: parseRetryAfter(response.headers.get('retry-after'), options.nowUnixMillis()),
    };
  }
  if (status >= 300 && status < 400) {
    const location = response.headers.get('location');
    return {
      outcome: 'abandon',
      error: `HTTP ${status} redirect${location === null ? '' : ` to ${location}`}; configure the final URL`,
    };
  }
  return { outcome: 'abandon', error };
}

function describeFailure(error: unknown, options: SendOptions): string {
  if (options.signal?.aborted === true) return 'aborted before the sink answered: keyscope is stopping';
  const name = (error as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return `no answer within ${options.timeoutMillis} ms`;
  // undici reports "fetch failed" and puts the socket error (ECONNREFUSED, ECONNRESET…) in `cause`.
  const parts = [error instanceof Error ? error.message : String(error)];
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  for (const detail of [cause?.code, cause?.message]) {
    if (typeof detail === 'string' && !parts.includes(detail)) parts.push(detail);
  }
  return `network error: ${parts.join(': ')}`;
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= ERROR_BODY_MAX_CHARS ? flat : `${flat.slice(0, ERROR_BODY_MAX_CHARS)}…`;
}
