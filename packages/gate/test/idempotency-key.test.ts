import { describe, expect, it } from 'vitest';
import { keyFromHeader } from '../src/idempotency-key.ts';

const INVALID = expect.objectContaining({ code: 'KS_GATE_KEY_INVALID', httpStatus: 400 });

describe('keyFromHeader', () => {
  it('reads a structured-field string and a bare value alike', () => {
    expect(keyFromHeader('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toBe(
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    );
    expect(keyFromHeader('8e03978e-40d5-43e8-bc93-6894a57f9324')).toBe(
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    );
    expect(keyFromHeader('"say \\"hi\\" \\\\ bye"')).toBe('say "hi" \\ bye');
  });

  it('treats an absent or empty header as no key', () => {
    expect(keyFromHeader(undefined)).toBeUndefined();
    expect(keyFromHeader('  ')).toBeUndefined();
    expect(keyFromHeader('""')).toBeUndefined();
  });

  it('refuses malformed quoting, repeated headers, long keys and non-ASCII keys', () => {
    expect(() => keyFromHeader('"open')).toThrow(INVALID);
    expect(() => keyFromHeader('"a"b"')).toThrow(INVALID);
    expect(() => keyFromHeader('"bad \\n escape"')).toThrow(INVALID);
    expect(() => keyFromHeader(['a', 'b'])).toThrow(INVALID);
    expect(() => keyFromHeader('k'.repeat(256))).toThrow(INVALID);
    expect(keyFromHeader('k'.repeat(255))).toHaveLength(255);
    expect(() => keyFromHeader('clé')).toThrow(INVALID);
  });
});
