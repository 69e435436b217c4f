import { GATE_KEY_INVALID, IdempotencyRequestError } from './errors.ts';

export const MAX_KEY_LENGTH = 255;

/**
 * Checks a key the service received: 1 to 255 printable ASCII characters. The draft leaves the
 * format to the server and asks it to validate keys before using them as lookup keys; this bound
 * keeps store rows and span attributes small.
 */
export function checkIdempotencyKey(key: string): string {
  if (key.length > MAX_KEY_LENGTH) {
    throw new IdempotencyRequestError(
      GATE_KEY_INVALID,
      `idempotency key must be at most ${MAX_KEY_LENGTH} characters, received ${key.length}`,
    );
  }
  if (!/^[\x20-\x7e]+$/.test(key)) {
    throw new IdempotencyRequestError(
      GATE_KEY_INVALID,
      'idempotency key must be printable ASCII, received other characters',
    );
  }
  return key;
}

/**
 * The key carried by an `Idempotency-Key` header, or undefined when there is none (absent or
 * empty). The draft makes the value a structured-field string (`"8e03…"`); many clients send the
 * bare value instead, so both are accepted. Repeated headers are refused: the draft forbids them.
 */
export function keyFromHeader(value: string | readonly string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new IdempotencyRequestError(
      GATE_KEY_INVALID,
      `Idempotency-Key must be sent once, received ${value.length} times`,
    );
  }
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  const key = trimmed.startsWith('"') ? unquote(trimmed) : trimmed;
  return key === '' ? undefined : checkIdempotencyKey(key);
}

function unquote(quoted: string): string {
  let key = '';
  for (let i = 1; i < quoted.length; i++) {
    const char = quoted[i]!;
    if (char === '"') {
      if (i !== quoted.length - 1) break;
      return key;
    }
    if (char === '\\') {
      const next = quoted[++i];
      if (next !== '"' && next !== '\\') break;
      key += next;
    } else key += char;
  }
  throw new IdempotencyRequestError(
    GATE_KEY_INVALID,
    'Idempotency-Key must be a quoted string with only \\" and \\\\ escapes, or a bare value',
  );
}
