/**
 * Text as a terminal shows it, for the table report: how many columns a string takes, and the same
 * string cut to a number of columns. Keys, tenants and store names come from spans, so from whoever
 * sends requests; before they reach a terminal, control characters (an escape sequence could
 * clear the screen or rewrite earlier lines) and bidirectional overrides (which reorder what a
 * reader sees) are replaced by U+FFFD.
 */

export const ELLIPSIS = '…';

// C0 and C1 controls, DEL, and the bidirectional embeddings, overrides and isolates.
const UNSAFE = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu;
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]$/u;
const EMOJI = /^\p{Emoji_Presentation}$/u;

/** `text` with every character that could steer the terminal replaced by U+FFFD. */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, '\ufffd');
}

/** Columns one code point takes: 0 for combining and format characters, 2 for wide ones. */
export function codePointWidth(char: string): number {
  const code = char.codePointAt(0)!;
  if (code < 0x300) return 1;
  if (ZERO_WIDTH.test(char)) return 0;
  if (isWide(code) || EMOJI.test(char)) return 2;
  return 1;
}

/** East Asian Wide and Fullwidth blocks (Unicode UAX #11), as terminals draw them. */
function isWide(code: number): boolean {
  return (
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0x303e) ||
    (code >= 0x3041 && code <= 0x33ff) ||
    (code >= 0x3400 && code <= 0x4dbf) ||
    (code >= 0x4e00 && code <= 0x9fff) ||
    (code >= 0xa000 && code <= 0xa4cf) ||
    (code >= 0xa960 && code <= 0xa97f) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe10 && code <= 0xfe19) ||
    (code >= 0xfe30 && code <= 0xfe6f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1f64f) ||
    (code >= 0x1f900 && code <= 0x1f9ff) ||
    (code >= 0x20000 && code <= 0x3fffd)
  );
}

/** Columns `text` takes on a terminal (after `terminalSafe`). */
export function displayWidth(text: string): number {
  let width = 0;
  for (let i = 0; i < text.length; i++) {
    // ASCII, the usual case, without iterating by code point.
    const unit = text.charCodeAt(i);
    if (unit < 0x300) {
      width++;
      continue;
    }
    const char = String.fromCodePoint(text.codePointAt(i)!);
    if (char.length === 2) i++;
    width += codePointWidth(char);
  }
  return width;
}

/**
 * `text` in at most `columns` columns: as it is when it fits, else cut at a character boundary with
 * an ellipsis as its last column (a wide character that would straddle the cut goes whole).
 */
export function truncateToWidth(text: string, columns: number): string {
  if (displayWidth(text) <= columns) return text;
  if (columns <= 0) return '';
  let out = '';
  let width = 0;
  for (const char of text) {
    const w = codePointWidth(char);
    if (width + w > columns - 1) break;
    out += char;
    width += w;
  }
  return out + ELLIPSIS;
}

/** `text` padded with spaces to `columns` columns (never cut). */
export function padToWidth(text: string, columns: number): string {
  const width = displayWidth(text);
  return width >= columns ? text : text + ' '.repeat(columns - width);
}
