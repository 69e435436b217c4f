/**
 * Exponential backoff with full jitter: the wait before retry n (n = failures so far, from 0) is
 * uniform in [0, min(cap, base × 2^n)]. The jitter spreads the retries of many entries that failed
 * together (a sink that was down) instead of sending them back in one burst when it returns.
 */
export function retryDelayMillis(
  failures: number,
  options: { retryBaseMillis: number; retryCapMillis: number },
  random: () => number,
): number {
  return Math.floor(random() * retryCeilingMillis(failures, options));
}

/** The longest `retryDelayMillis` can wait after `failures` failures. */
export function retryCeilingMillis(
  failures: number,
  options: { retryBaseMillis: number; retryCapMillis: number },
): number {
  return Math.min(options.retryCapMillis, options.retryBaseMillis * 2 ** Math.max(0, failures));
}

/**
 * A `Retry-After` header in milliseconds from `nowUnixMillis`: delay-seconds or an HTTP date
 * (RFC 9110 §10.2.3). Null when absent or unreadable; a date in the past is 0.
 */
export function parseRetryAfter(value: string | null, nowUnixMillis: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // HTTP dates name the weekday and month; without a letter, Date.parse would read "-5" as a year.
  if (!/[a-z]/i.test(text)) return null;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - nowUnixMillis);
}
