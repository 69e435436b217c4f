import type { Severity } from '@keyscope/detector';

/** The base and cap of one page's backoff (see `backoffOf`). */
export interface Backoff {
  retryBaseMillis: number;
  retryCapMillis: number;
}

/**
 * Exponential backoff with full jitter: the wait before retry n (n = failures so far, from 0) is
 * uniform in [0, min(cap, base × 2^n)]. The jitter spreads the retries of many entries that failed
 * together (a sink that was down) instead of sending them back in one burst when it returns.
 */
export function retryDelayMillis(failures: number, options: Backoff, random: () => number): number {
  return Math.floor(random() * retryCeilingMillis(failures, options));
}

/**
 * The backoff of an incident's page: critical pages wait at most `criticalRetryCapMillis` between
 * attempts, so one reaches a sink back from an outage of any length within that; the others keep
 * the longer `retryCapMillis`, sparing a sink that is down the traffic of lesser pages.
 */
export function backoffOf(
  severity: Severity,
  config: { retryBaseMillis: number; retryCapMillis: number; criticalRetryCapMillis: number },
): Backoff {
  return {
    retryBaseMillis: config.retryBaseMillis,
    retryCapMillis: severity === 'critical' ? config.criticalRetryCapMillis : config.retryCapMillis,
  };
}

/** The longest `retryDelayMillis` can wait after `failures` failures. */
export function retryCeilingMillis(failures: number, options: Backoff): number {
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
