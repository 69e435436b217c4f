import type { ErrorDefinition } from '@keyscope/errors';
import type { Span } from '@keyscope/otlp';
import type { Attempt, ExtractedAttempts, KeylessSend } from './attempt.ts';
import {
  SPAN_ENDS_BEFORE_START,
  SPAN_IN_FUTURE,
  SPAN_KEY_TOO_LONG,
  SPAN_NAME_TOO_LONG,
  SPAN_TOO_OLD,
} from './errors.ts';

/**
 * What extraction refuses or cuts, span by span, when it is given limits (`extractAttempts`'s
 * third argument). The caller turns its clock into the time window: extraction itself reads no
 * clock. Every check is a comparison or a string length on what the decoder already built, in
 * extraction's one pass over the spans.
 *
 * A refused span has no effect at all: no attempt, no node activity. Refused, by the first rule it
 * breaks:
 * - it starts before `notBeforeUnixMillis` (SPAN_TOO_OLD) or ends (or starts) after
 *   `notAfterUnixMillis` (SPAN_IN_FUTURE), or it ends before it starts (SPAN_ENDS_BEFORE_START);
 * - its resource's service, node, cluster, region or zone name is longer than `maxNameBytes`
 *   (SPAN_NAME_TOO_LONG);
 * - its idempotency key is longer than `maxKeyBytes` (SPAN_KEY_TOO_LONG);
 * - its attempt's tenant, or the store it states (a derived one is made of checked names), is
 *   longer than `maxNameBytes` (SPAN_NAME_TOO_LONG).
 *
 * Cut to their limit at a character boundary, the span kept (counted in `truncatedValues`): the
 * operation (`http.route` or the span name, which some instrumentations fill with a URL or a
 * statement) to `maxNameBytes`, and a client attempt's `target` and `error` (an exception's
 * message) to `maxValueBytes`. These are free text; the names above identify where a key ran, and
 * a cut one could make two stores one. A keyless send's are cut alike (`limitSend`).
 */
export interface SpanLimits {
  readonly notBeforeUnixMillis: number;
  readonly notAfterUnixMillis: number;
  /** UTF-8 bytes. */
  readonly maxKeyBytes: number;
  readonly maxNameBytes: number;
  readonly maxValueBytes: number;
}

/**
 * 2000-01-01T00:00:00Z: no span a tracing SDK sends is older. An earlier time is an unset field
 * (0) or a unit mistake (seconds, milliseconds or microseconds sent as nanoseconds all land in
 * 1970), so every window starts here at the earliest.
 */
export const EARLIEST_SPAN_UNIX_MILLIS = Date.UTC(2000, 0, 1);

/** The codes a span can be refused with: the reasons refused spans are counted under. */
export const SPAN_REFUSALS: readonly ErrorDefinition[] = [
  SPAN_TOO_OLD,
  SPAN_IN_FUTURE,
  SPAN_ENDS_BEFORE_START,
  SPAN_KEY_TOO_LONG,
  SPAN_NAME_TOO_LONG,
];

export interface SpanRefusals {
  /** Spans refused, by the code of the first rule each broke. */
  readonly byCode: Record<string, number>;
  total: number;
  /** What the first refused span broke (its code, ids and values), for the sender; '' when none. */
  firstMessage: string;
  /** Values cut to their limit, on spans that were kept. */
  truncatedValues: number;
}

/** Extraction's result under limits: what was refused beside what was extracted. */
export interface CheckedAttempts extends ExtractedAttempts {
  readonly refusals: SpanRefusals;
}

export function createSpanRefusals(): SpanRefusals {
  return { byCode: {}, total: 0, firstMessage: '', truncatedValues: 0 };
}

export function refuseSpan(
  refusals: SpanRefusals,
  code: ErrorDefinition,
  span: Span,
  detail: () => string,
): void {
  refusals.byCode[code.code] = (refusals.byCode[code.code] ?? 0) + 1;
  refusals.total++;
  if (refusals.firstMessage === '') {
    // Spans without a key come without ids under the pipeline's decode options.
    const which = span.traceId === '' ? 'a span without a key' : `span ${span.traceId}/${span.spanId}`;
    refusals.firstMessage = `${code.code}: ${which}: ${detail()}`;
  }
}

/** The time rule a span breaks, or null. Negated comparisons, so a NaN time is refused too. */
export function timeRefusal(span: Span, limits: SpanLimits): ErrorDefinition | null {
  const start = span.startTimeUnixMillis;
  const end = span.endTimeUnixMillis;
  if (!(start >= limits.notBeforeUnixMillis)) return SPAN_TOO_OLD;
  if (!(start <= limits.notAfterUnixMillis && end <= limits.notAfterUnixMillis)) return SPAN_IN_FUTURE;
  if (!(end >= start)) return SPAN_ENDS_BEFORE_START;
  return null;
}

export function timeRefusalDetail(code: ErrorDefinition, span: Span, limits: SpanLimits): string {
  const start = timeText(span.startTimeUnixMillis);
  const end = timeText(span.endTimeUnixMillis);
  if (code === SPAN_TOO_OLD) {
    return `spans must start at or after ${timeText(limits.notBeforeUnixMillis)}, received a start at ${start}`;
  }
  if (code === SPAN_IN_FUTURE) {
    return `spans must end at or before ${timeText(limits.notAfterUnixMillis)}, received ${start} to ${end}`;
  }
  return `spans must end at or after their start, received ${start} to ${end}`;
}

/** ISO 8601 where a Date can show it (±8.64·10¹⁵ ms), else the milliseconds. */
function timeText(millis: number): string {
  return Math.abs(millis) <= 8.64e15 ? new Date(millis).toISOString() : `${millis} ms since 1970`;
}

/**
 * Whether `text` is longer than `maxBytes` in UTF-8. A UTF-16 unit is one to three UTF-8 bytes,
 * so most strings are settled by their length without encoding them.
 */
export function exceedsBytes(text: string, maxBytes: number): boolean {
  const length = text.length;
  if (length > maxBytes) return true;
  if (length * 3 <= maxBytes) return false;
  return Buffer.byteLength(text, 'utf8') > maxBytes;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `text` cut to at most `maxBytes` of UTF-8, at a character boundary (encodeInto writes whole characters). */
export function truncateToBytes(text: string, maxBytes: number): string {
  const bytes = new Uint8Array(maxBytes);
  const { written } = encoder.encodeInto(text, bytes);
  return decoder.decode(bytes.subarray(0, written));
}

/**
 * Applies the attempt rules but the store's: a tenant over `maxNameBytes` refuses it (the
 * returned detail); an operation, target, error or business id over its limit is cut. The caller checks the
 * key before the attempt is built, and a stated store after (a store derived from the placement is
 * not checked: its parts are).
 */
export function limitAttempt(attempt: Attempt, limits: SpanLimits, refusals: SpanRefusals): string | null {
  const maxName = limits.maxNameBytes;
  if (exceedsBytes(attempt.tenant, maxName)) return tooLong('the tenant', attempt.tenant, maxName);
  refusals.truncatedValues += cutValues(attempt, limits);
  return null;
}

/**
 * Cuts a keyless send's operation, target and error as `limitAttempt` cuts a client attempt's,
 * uncounted: most sends never become an attempt (see KeylessSend), and one that does is cut
 * already.
 */
export function limitSend(send: KeylessSend, limits: SpanLimits): void {
  cutValues(send, limits);
}

/** The operation, a client's target and error, and a decision's business id, cut to their limits; how many were cut. */
function cutValues(attempt: Attempt | KeylessSend, limits: SpanLimits): number {
  let cut = 0;
  const maxName = limits.maxNameBytes;
  if (exceedsBytes(attempt.operation, maxName)) {
    attempt.operation = truncateToBytes(attempt.operation, maxName);
    cut++;
  }
  if ((attempt.kind === 'server' || attempt.kind === 'arrival') && attempt.businessId !== '') {
    if (exceedsBytes(attempt.businessId, limits.maxValueBytes)) {
      attempt.businessId = truncateToBytes(attempt.businessId, limits.maxValueBytes);
      cut++;
    }
  }
  if (attempt.kind === 'client') {
    const maxValue = limits.maxValueBytes;
    if (exceedsBytes(attempt.target, maxValue)) {
      attempt.target = truncateToBytes(attempt.target, maxValue);
      cut++;
    }
    if (exceedsBytes(attempt.error, maxValue)) {
      attempt.error = truncateToBytes(attempt.error, maxValue);
      cut++;
    }
  }
  return cut;
}

/** The detail for a value over its limit; never quotes more than its start. */
export function tooLong(what: string, text: string, maxBytes: number): string {
  return `${what} must be at most ${maxBytes} bytes of UTF-8, received ${Buffer.byteLength(text, 'utf8')} bytes starting '${text.slice(0, 32)}…'`;
}
