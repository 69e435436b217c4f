import { KeyscopeError } from '@keyscope/errors';
import { OTLP_UTF8 } from './errors.ts';

// fatal: invalid UTF-8 must be refused, not replaced with U+FFFD, or two different keys could
// decode to one string. ignoreBOM: a leading U+FEFF is data inside a protobuf string, not a marker.
const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const fromCharCode = String.fromCharCode;

/**
 * Below this length, building the string in JavaScript beats the fixed cost of a TextDecoder call
 * (a view allocation plus a native call); above it, the native decoder wins and also avoids
 * building a rope of 8-character pieces.
 */
const SHORT_STRING_BYTES = 32;

/**
 * Decodes `bytes[start, end)` as strict UTF-8. Most OTLP strings (attribute keys, span names,
 * service names, ids) are short ASCII, so those take a pure-JavaScript path; anything else goes to
 * the fatal TextDecoder. Invalid bytes throw OTLP_UTF8 naming `start` as the byte offset.
 */
export function decodeUtf8(bytes: Uint8Array, start: number, end: number): string {
  const length = end - start;
  if (length <= SHORT_STRING_BYTES) {
    let out = '';
    let i = start;
    while (end - i >= 8) {
      const c0 = bytes[i]!;
      const c1 = bytes[i + 1]!;
      const c2 = bytes[i + 2]!;
      const c3 = bytes[i + 3]!;
      const c4 = bytes[i + 4]!;
      const c5 = bytes[i + 5]!;
      const c6 = bytes[i + 6]!;
      const c7 = bytes[i + 7]!;
      if ((c0 | c1 | c2 | c3 | c4 | c5 | c6 | c7) >= 0x80) return decodeStrict(bytes, start, end);
      out += fromCharCode(c0, c1, c2, c3, c4, c5, c6, c7);
      i += 8;
    }
    while (i < end) {
      const c = bytes[i++]!;
      if (c >= 0x80) return decodeStrict(bytes, start, end);
      out += fromCharCode(c);
    }
    return out;
  }
  // Longer ASCII (UUID keys, store and host names) from a Node Buffer, as every receiver holds
  // them: latin1 reads ASCII as UTF-8 does, without the view a TextDecoder call needs.
  if (bytes instanceof Buffer && isAscii(bytes, start, end)) return bytes.toString('latin1', start, end);
  return decodeStrict(bytes, start, end);
}

function isAscii(bytes: Uint8Array, start: number, end: number): boolean {
  let any = 0;
  for (let i = start; i < end; i++) any |= bytes[i]!;
  return any < 0x80;
}

function decodeStrict(bytes: Uint8Array, start: number, end: number): string {
  try {
    return strictDecoder.decode(bytes.subarray(start, end));
  } catch (cause) {
    throw new KeyscopeError(
      OTLP_UTF8,
      `string field must be valid UTF-8, received ${end - start} bytes that are not (at byte ${start})`,
      { cause },
    );
  }
}
