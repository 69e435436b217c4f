/**
 * Lowercase hex for trace and span ids. Ids are decoded for every span, so this avoids both
 * per-byte string concatenation (which builds rope strings) and native Buffer calls (whose
 * per-call cost dominates for 8 bytes): eight bytes become one 16-character flat string through
 * a single `String.fromCharCode` call.
 */

const HIGH = new Uint16Array(256);
const LOW = new Uint16Array(256);
const DIGITS = '0123456789abcdef';
for (let byte = 0; byte < 256; byte++) {
  HIGH[byte] = DIGITS.charCodeAt(byte >>> 4);
  LOW[byte] = DIGITS.charCodeAt(byte & 15);
}

const fromCharCode = String.fromCharCode;

/** Hex of the 8 bytes at `start`; the caller has checked the bounds. */
export function hexOf8(bytes: Uint8Array, start: number): string {
  const a = bytes[start]!;
  const b = bytes[start + 1]!;
  const c = bytes[start + 2]!;
  const d = bytes[start + 3]!;
  const e = bytes[start + 4]!;
  const f = bytes[start + 5]!;
  const g = bytes[start + 6]!;
  const h = bytes[start + 7]!;
  return fromCharCode(
    HIGH[a]!,
    LOW[a]!,
    HIGH[b]!,
    LOW[b]!,
    HIGH[c]!,
    LOW[c]!,
    HIGH[d]!,
    LOW[d]!,
    HIGH[e]!,
    LOW[e]!,
    HIGH[f]!,
    LOW[f]!,
    HIGH[g]!,
    LOW[g]!,
    HIGH[h]!,
    LOW[h]!,
  );
}

/**
 * Hex of the 16 bytes at `start`; the caller has checked the bounds. One call rather than two
 * halves joined: a joined 32-character string is a rope that every later hash lookup (the
 * detector keys maps by trace id) must flatten first.
 */
export function hexOf16(bytes: Uint8Array, start: number): string {
  const a = bytes[start]!;
  const b = bytes[start + 1]!;
  const c = bytes[start + 2]!;
  const d = bytes[start + 3]!;
  const e = bytes[start + 4]!;
  const f = bytes[start + 5]!;
  const g = bytes[start + 6]!;
  const h = bytes[start + 7]!;
  const i = bytes[start + 8]!;
  const j = bytes[start + 9]!;
  const k = bytes[start + 10]!;
  const l = bytes[start + 11]!;
  const m = bytes[start + 12]!;
  const n = bytes[start + 13]!;
  const o = bytes[start + 14]!;
  const p = bytes[start + 15]!;
  return fromCharCode(
    HIGH[a]!,
    LOW[a]!,
    HIGH[b]!,
    LOW[b]!,
    HIGH[c]!,
    LOW[c]!,
    HIGH[d]!,
    LOW[d]!,
    HIGH[e]!,
    LOW[e]!,
    HIGH[f]!,
    LOW[f]!,
    HIGH[g]!,
    LOW[g]!,
    HIGH[h]!,
    LOW[h]!,
    HIGH[i]!,
    LOW[i]!,
    HIGH[j]!,
    LOW[j]!,
    HIGH[k]!,
    LOW[k]!,
    HIGH[l]!,
    LOW[l]!,
    HIGH[m]!,
    LOW[m]!,
    HIGH[n]!,
    LOW[n]!,
    HIGH[o]!,
    LOW[o]!,
    HIGH[p]!,
    LOW[p]!,
  );
}

/** Hex of any byte range, for the cold paths (messages, tests). */
export function hexOf(bytes: Uint8Array, start = 0, end = bytes.length): string {
  let out = '';
  for (let i = start; i < end; i++) out += DIGITS[bytes[i]! >>> 4]! + DIGITS[bytes[i]! & 15]!;
  return out;
}

/** Value of one hex digit (either case), or -1. */
function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

/** Bytes of a hex string (either case), or null when it has odd length or a non-hex character. */
export function bytesOfHex(hex: string): Uint8Array | null {
  if ((hex.length & 1) !== 0) return null;
  const out = new Uint8Array(hex.length >>> 1);
  for (let i = 0; i < out.length; i++) {
    const high = nibble(hex.charCodeAt(2 * i));
    const low = nibble(hex.charCodeAt(2 * i + 1));
    if (high < 0 || low < 0) return null;
    out[i] = (high << 4) | low;
  }
  return out;
}
