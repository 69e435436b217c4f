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

/**
 * The most of an answer's body keyscope reads: enough for the error text it keeps. The rest is
 * never read: the body is cancelled, which closes the connection, so a sink answering with gigabytes
 * (or without end) costs a few KiB.
 */
export const ANSWER_MAX_BYTES = 4 * 1024;

/**
 * How long the body of a failed answer is read once its status has arrived: its start is all
 * keyscope keeps, and a sink that trickles it must not keep a failed page open (as late) until
 * `timeoutMillis`.
 */
export const ANSWER_READ_MAX_MILLIS = 1_000;

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
  const status = response.status;
  if (status >= 200 && status < 300) {
    // The status is the sink's answer; its body says nothing keyscope keeps, so it is not read.
    await response.body?.cancel().catch(() => {});
    return { outcome: 'delivered', status };
  }
  const text = await readStart(response.body, ANSWER_MAX_BYTES);
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

/**
 * The first `maxBytes` of a body (a multi-byte character cut at the end shows as U+FFFD), read for
 * at most ANSWER_READ_MAX_MILLIS, then cancels the rest unread. A body cut short (by that time, by
 * the exchange's signal, by a reset) gives what arrived before.
 */
async function readStart(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<string> {
  if (body === null) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  // Cancelling ends a pending read as done.
  const cut = setTimeout(() => reader.cancel().catch(() => {}), ANSWER_READ_MAX_MILLIS);
  try {
    while (bytes < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      bytes += value.byteLength;
    }
  } catch {
    // Aborted or reset mid-body: the status is the answer, and the start of its text is enough.
  } finally {
    clearTimeout(cut);
  }
  await reader.cancel().catch(() => {});
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, maxBytes));
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
