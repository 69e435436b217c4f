import { describe, expect, it } from 'vitest';
import { ATTEMPTS_ERRORS } from '../src/errors.ts';

describe('attempts error codes', () => {
  it('declares only permanent codes: KS_MAPPING_ for mapping files, KS_SPAN_ for refused spans', () => {
    for (const definition of ATTEMPTS_ERRORS) {
      expect(definition.code).toMatch(/^KS_(MAPPING|SPAN)_[A-Z_]+$/);
      expect(definition.retryable).toBe(false);
    }
  });
});
