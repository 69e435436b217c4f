import { KeyscopeError } from '@keyscope/errors';
import { CURSOR_INVALID } from './errors.ts';

/** Cursors are opaque to clients; inside they are the `seq` of the last item returned. */
export function encodeCursor(seq: number): string {
  return Buffer.from(`s${seq}`).toString('base64url');
}

export function decodeCursor(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const seq = Number(text.slice(1));
  if (!text.startsWith('s') || !Number.isSafeInteger(seq) || seq < 0) {
    throw new KeyscopeError(
      CURSOR_INVALID,
      `cursor ${JSON.stringify(cursor)} is not a cursor this API issued`,
    );
  }
  return seq;
}
