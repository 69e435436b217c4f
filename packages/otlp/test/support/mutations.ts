import { isKeyscopeError } from '@keyscope/errors';
import { expect } from 'vitest';
import { OTLP_ERRORS } from '../../src/errors.ts';

/* How the decoders' fuzz tests (fuzz.test.ts, fuzz-logs.test.ts) judge a mutated payload; the mutations are in src/testing.ts. */

export { at, mutations, prng } from '../../src/testing.ts';

const KNOWN_CODES = new Set(OTLP_ERRORS.map((definition) => definition.code));

/** Decodes and returns 'ok', or the KeyscopeError code; anything else fails the test. */
export function outcome(run: () => unknown, describeInput: () => string): string {
  try {
    const spans = run();
    expect(Array.isArray(spans)).toBe(true);
    return 'ok';
  } catch (error) {
    if (!isKeyscopeError(error) || !KNOWN_CODES.has(error.code)) {
      throw new Error(`unexpected ${String(error)} for ${describeInput()}`, { cause: error });
    }
    return error.code;
  }
}
