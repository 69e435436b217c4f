/**
 * Whether a request recorded as ending at `endUnixMillis` had ended when another, recorded as
 * starting at `startUnixMillis`, began — as far as span times can say.
 *
 * The OpenTelemetry JS SDK takes a span's start from `Date.now()`, a whole millisecond, and its end
 * as that start plus the duration it measured: both read up to a millisecond early, by an amount
 * of the span's own. A Node service answering one request and then the next from the same client
 * on a warm connection records the second's start as much as a millisecond before the first's
 * end: measured against the real SDK, about one back-to-back pair in twenty. So a start in whole
 * milliseconds comes after an end that is less than a millisecond later; a start with a fraction
 * of a millisecond (an SDK with a finer clock) is read as it is.
 */
export function endedBefore(endUnixMillis: number, startUnixMillis: number): boolean {
  return Number.isInteger(startUnixMillis)
    ? endUnixMillis < startUnixMillis + 1
    : endUnixMillis <= startUnixMillis;
}
