/**
 * Collapses the ids in an operation that is a URL path: without `http.route` the operation is the
 * span's name, which many instrumentations fill with the request's path (`POST /payments/8f3a…`),
 * and every payment would be a tier of its own. Each path segment that is an id becomes `{id}`,
 * and a query or fragment is dropped, so `POST /payments/8f3a…?retry=1` is `POST /payments/{id}`.
 *
 * A segment (the text between two `/`) is an id when it is
 * - a number: digits only (`8812`);
 * - a UUID, with or without its dashes;
 * - hex of 8 or more characters with a digit among them (`8f3a9b2c`; `deadbeef` is a word);
 * - or holds a run of 4 or more digits (`order-12345`, `INV-2024-0001`);
 * - a random token: 16 or more letters, digits and `-_.~+=`, with 3 or more digits, or with a
 *   digit and both upper and lower case letters (`pay_2K3jf8sLq0x9ZzA`, a ULID);
 * - or matches one of the mapping's `operationIdPatterns` whole.
 *
 * An operation without a `/` is left as it is: it is a name, not a path.
 */
export const ID_PLACEHOLDER = '{id}';

/** `extra`: the mapping's patterns, each anchored to a whole segment. */
export function collapseOperationIds(operation: string, extra: readonly RegExp[]): string {
  if (operation.indexOf('/') === -1) return operation;
  let end = operation.length;
  for (let i = 0; i < operation.length; i++) {
    const code = operation.charCodeAt(i);
    if (code === QUESTION || code === HASH) {
      end = i;
      break;
    }
  }
  let out: string | null = end === operation.length ? null : '';
  let from = 0;
  // `out` stays null while nothing changed: most operations are templates already.
  for (let at = 0; at <= end; at++) {
    if (at < end && operation.charCodeAt(at) !== SLASH) continue;
    const id = at > from && isId(operation, from, at, extra);
    if (id && out === null) out = operation.slice(0, from);
    if (out !== null) {
      out += id ? ID_PLACEHOLDER : operation.slice(from, at);
      if (at < end) out += '/';
    }
    from = at + 1;
  }
  return out ?? operation;
}

const SLASH = 0x2f;
const QUESTION = 0x3f;
const HASH = 0x23;
const DASH = 0x2d;

function isId(text: string, from: number, to: number, extra: readonly RegExp[]): boolean {
  const length = to - from;
  let digits = 0;
  let upper = 0;
  let lower = 0;
  let hexLetters = 0;
  let other = 0;
  let run = 0;
  let longestRun = 0;
  for (let i = from; i < to; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x30 && code <= 0x39) {
      digits++;
      if (++run > longestRun) longestRun = run;
      continue;
    }
    run = 0;
    if (code >= 0x61 && code <= 0x7a) {
      lower++;
      if (code <= 0x66) hexLetters++;
    } else if (code >= 0x41 && code <= 0x5a) {
      upper++;
      if (code <= 0x46) hexLetters++;
    } else if (!isTokenPunctuation(code)) other++;
  }
  if (digits === length) return true;
  if (longestRun >= 4) return true;
  const hex = digits + hexLetters;
  if (other === 0 && digits > 0) {
    if (hex === length && length >= 8) return true;
    if (isUuid(text, from, length, hex)) return true;
    if (length >= 16 && (digits >= 3 || (upper > 0 && lower > 0))) return true;
  }
  if (extra.length > 0) {
    const segment = text.slice(from, to);
    for (const pattern of extra) if (pattern.test(segment)) return true;
  }
  return false;
}

/** `-_.~+=`: what tokens (base64url, ULIDs, prefixed ids) hold besides letters and digits. */
function isTokenPunctuation(code: number): boolean {
  return code === DASH || code === 0x5f || code === 0x2e || code === 0x7e || code === 0x2b || code === 0x3d;
}

/** 8-4-4-4-12 hex digits (`hex` counts the segment's hex characters). */
function isUuid(text: string, from: number, length: number, hex: number): boolean {
  if (length !== 36 || hex !== 32) return false;
  return (
    text.charCodeAt(from + 8) === DASH &&
    text.charCodeAt(from + 13) === DASH &&
    text.charCodeAt(from + 18) === DASH &&
    text.charCodeAt(from + 23) === DASH
  );
}
